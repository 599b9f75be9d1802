"""CPU kernels of the product-key memory (``routing.layers.pkm``): the top-K selection over the
n_keys² sums of sub-key scores, and the gate-weighted sum of the selected values.

The torch selection (Lample et al. 2019's: top-K of each half, then the top K of the
candidate sums) costs three ``topk`` calls and several (B, M) gathers per step; at the
``routers`` bench's sizes (K = a quarter of the slots) it made PKM 4–5x slower than a dense
network of the same total width (issue 7). Here each row is handled at once: both halves are
sorted, and the K largest sums of the two sorted lists are taken by a K-way merge over the
ranks of the b half, ties going to the lexicographically lowest (rank_b, rank_a), which is
the reference's order. Up to ``FRONTIER_MAX`` ranks the merge scans its frontier for the
maximum with four independent running maxima (2x faster than a max-heap at 32 ranks: the
heap's branches mispredict); longer halves pop a max-heap, O(log K_half) per slot. The
per-row helpers are inlined (``inline="always"``): a call per row took and released a
reference to each of its array arguments, atomic operations that cost 5-15 % of the selection.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["pkm_select", "weighted_value_sum"]

# halves up to this many ranks merge by scanning the frontier (vectorisable, no branches to
# mispredict); longer ones through a max-heap, O(log k_half) per popped slot
FRONTIER_MAX = 64


@njit(cache=True, inline="always")
def _sorted_half(u, k, vals, pos):
    """The k largest of u, descending, ties to the lowest index (u finite), by insertion."""
    filled = 0
    for j in range(u.size):
        v = u[j]
        at = filled
        while at > 0 and vals[at - 1] < v:
            at -= 1
        if at >= k:
            continue
        for m in range(min(filled, k - 1), at, -1):
            vals[m] = vals[m - 1]
            pos[m] = pos[m - 1]
        vals[at] = v
        pos[at] = j
        if filled < k:
            filled += 1


@njit(cache=True)
def _select(u_a, u_b, k, k_half, n_keys, slot, pos_a, pos_b):
    """Fill slot, pos_a, pos_b (B, k); False (rows unfinished) if a score, or the sum of the
    two largest magnitudes of a row, is not finite (then no sum overflows to ±inf)."""
    for r in range(u_a.shape[0]):
        big_a = big_b = 0.0
        for j in range(n_keys):
            if not (np.isfinite(u_a[r, j]) and np.isfinite(u_b[r, j])):
                return False
            big_a, big_b = max(big_a, abs(u_a[r, j])), max(big_b, abs(u_b[r, j]))
        if not np.isfinite(u_a.dtype.type(big_a) + u_a.dtype.type(big_b)):
            return False
    va = np.empty(k_half, u_a.dtype)
    vb = np.empty(k_half, u_a.dtype)
    ia = np.empty(k_half, np.int64)
    ib = np.empty(k_half, np.int64)
    merge_by_scan = k_half <= FRONTIER_MAX
    frontier = np.empty(k_half, u_a.dtype)  # scan: the frontier sums; heap: the heap's sums
    ranks = np.empty(k_half, np.int64)  # scan: the next rank_a per rank_b; heap: the pairs
    for r in range(u_a.shape[0]):
        _sorted_half(u_a[r], k_half, va, ia)
        _sorted_half(u_b[r], k_half, vb, ib)
        if merge_by_scan:
            _merge_by_scan(va, ia, vb, ib, k, n_keys, frontier, ranks, slot[r], pos_a[r],
                           pos_b[r])
        else:
            _merge_by_heap(va, ia, vb, ib, k, n_keys, frontier, ranks, slot[r], pos_a[r],
                           pos_b[r])
    return True


@njit(cache=True, inline="always")
def _merge_by_heap(va, ia, vb, ib, k, n_keys, hs, hp, slot_r, pos_a_r, pos_b_r):
    """The k largest sums vb[rank_b] + va[rank_a] of two descending lists, popped from a
    max-heap of (sum hs, pair hp) with pair = rank_b · k_half + rank_a: a larger sum first,
    then the lower pair, i.e. the lexicographically lower (rank_b, rank_a)."""
    k_half = va.size
    size = k_half
    for i in range(k_half):  # descending in the b half: already a max-heap
        hs[i] = vb[i] + va[0]
        hp[i] = i * k_half
    for out in range(k):
        rb, ra = divmod(hp[0], k_half)
        slot_r[out] = ib[rb] * n_keys + ia[ra]
        pos_a_r[out] = ia[ra]
        pos_b_r[out] = ib[rb]
        if ra + 1 < k_half:  # the next pair of the same b rank replaces the root
            s, p = vb[rb] + va[ra + 1], hp[0] + 1
        else:
            size -= 1
            s, p = hs[size], hp[size]
        at = 0
        while True:  # sift (s, p) down from the root
            child = 2 * at + 1
            if child >= size:
                break
            right = child + 1
            if right < size and (hs[right] > hs[child] or (hs[right] == hs[child]
                                                           and hp[right] < hp[child])):
                child = right
            if not (hs[child] > s or (hs[child] == s and hp[child] < p)):
                break
            hs[at], hp[at] = hs[child], hp[child]
            at = child
        hs[at], hp[at] = s, p


@njit(cache=True, inline="always")
def _merge_by_scan(va, ia, vb, ib, k, n_keys, frontier, next_a, slot_r, pos_a_r, pos_b_r):
    """The k largest sums vb[rank_b] + va[rank_a] of two descending lists, by a K-way merge
    whose frontier (the next sum of every rank_b) is scanned for its maximum at each step:
    the first maximum is the lowest rank_b, and within one rank_b the ranks_a come in order,
    so ties go to the lexicographically lowest (rank_b, rank_a), as in the heap. Sums are
    finite (checked by the caller): an exhausted rank_b is marked -inf and never chosen
    while a finite sum remains."""
    k_half = va.size
    for i in range(k_half):
        frontier[i] = vb[i] + va[0]
        next_a[i] = 0
    exhausted = frontier.dtype.type(-np.inf)
    for out in range(k):
        # four interleaved running maxima (independent dependency chains), each keeping its
        # first maximum; the tail joins chain 0, whose indices are all lower
        b0 = b1 = b2 = b3 = exhausted
        i0 = i1 = i2 = i3 = k_half
        i = 0
        while i + 4 <= k_half:
            if frontier[i] > b0:
                b0, i0 = frontier[i], i
            if frontier[i + 1] > b1:
                b1, i1 = frontier[i + 1], i + 1
            if frontier[i + 2] > b2:
                b2, i2 = frontier[i + 2], i + 2
            if frontier[i + 3] > b3:
                b3, i3 = frontier[i + 3], i + 3
            i += 4
        while i < k_half:
            if frontier[i] > b0:
                b0, i0 = frontier[i], i
            i += 1
        best, rb = b0, i0
        if b1 > best or (b1 == best and i1 < rb):
            best, rb = b1, i1
        if b2 > best or (b2 == best and i2 < rb):
            best, rb = b2, i2
        if b3 > best or (b3 == best and i3 < rb):
            best, rb = b3, i3
        ra = next_a[rb]
        slot_r[out] = ib[rb] * n_keys + ia[ra]
        pos_a_r[out] = ia[ra]
        pos_b_r[out] = ib[rb]
        if ra + 1 < k_half:
            frontier[rb] = vb[rb] + va[ra + 1]
            next_a[rb] = ra + 1
        else:
            frontier[rb] = exhausted


def pkm_select(u: torch.Tensor, k: int):
    """The top k of the n_keys² slot scores u_b[i] + u_a[j] (Lample et al. 2019; Csordás et
    al. 2023 Eq. 8), in descending score, ties to the lowest (rank in b, rank in a).

    Arguments:
        u: (B, 2, n_keys) float32 or float64 CPU tensor, u[:, 0] = u_a and u[:, 1] = u_b.
        k: 1 <= k <= n_keys².

    Returns:
        (slot, pos_a, pos_b), each (B, k) int64: slot = pos_b · n_keys + pos_a, the slot's
        score being u_b[pos_b] + u_a[pos_a]; or None if a score is not finite (the caller
        then takes the torch path, whose order NaN and inf follow).

    Raises:
        ValueError: if k is out of range.
    """
    B, _, n = u.shape
    if not 1 <= k <= n * n:
        raise ValueError(f"k must be in [1, {n * n}], got {k}")
    arr = u.detach().contiguous().numpy()
    slot, pos_a, pos_b = (np.empty((B, k), np.int64) for _ in range(3))
    if not _select(arr[:, 0], arr[:, 1], k, min(k, n), n, slot, pos_a, pos_b):
        return None
    return torch.from_numpy(slot), torch.from_numpy(pos_a), torch.from_numpy(pos_b)


@njit(cache=True)
def _weighted_sum(gate, slot, values, y):
    for b in range(slot.shape[0]):
        y[b, :] = 0
        for i in range(slot.shape[1]):
            g, row = gate[b, i], values[slot[b, i]]
            for o in range(row.size):
                y[b, o] += g * row[o]


@njit(cache=True)
def _weighted_sum_backward(dy, gate, slot, values, dgate, dvalues):
    dvalues[:] = 0
    for b in range(slot.shape[0]):
        dyb = dy[b]
        for i in range(slot.shape[1]):
            g, row, drow = gate[b, i], values[slot[b, i]], dvalues[slot[b, i]]
            acc = dyb[0] * row[0]
            drow[0] += g * dyb[0]
            for o in range(1, row.size):
                acc += dyb[o] * row[o]
                drow[o] += g * dyb[o]
            dgate[b, i] = acc


class _WeightedValueSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, slot, values):
        g, s, v = (t.detach().contiguous().numpy() for t in (gate, slot, values))
        y = np.empty((s.shape[0], v.shape[1]), v.dtype)
        _weighted_sum(g, s, v, y)
        ctx.save_for_backward(gate, slot, values)
        return torch.from_numpy(y)

    @staticmethod
    def backward(ctx, dy):
        g, s, v, d = (t.detach().contiguous().numpy() for t in (*ctx.saved_tensors, dy))
        dgate, dvalues = np.empty_like(g), np.empty_like(v)
        _weighted_sum_backward(d, g, s, v, dgate, dvalues)
        return torch.from_numpy(dgate), None, torch.from_numpy(dvalues)


def weighted_value_sum(gate: torch.Tensor, slot: torch.Tensor,
                       values: torch.Tensor) -> torch.Tensor:
    """y[b] = Σ_i gate[b, i] · values[slot[b, i]] on the CPU (PKM's output, Lample et al. 2019
    §3.1; Csordás et al. 2023 §3.2), differentiable in gate and values (once); the same as
    ``(gate.unsqueeze(2) * values[slot]).sum(1)`` without the (B, k, d_out) temporary and its
    scatter backward. Slots are not range-checked: ``PKM`` produces them in range.

    Arguments:
        gate: (B, k) float32 or float64; slot: (B, k) int64 in [0, n_slots);
        values: (n_slots, d_out), gate's dtype.

    Returns:
        (B, d_out).
    """
    return _WeightedValueSum.apply(gate, slot, values)
