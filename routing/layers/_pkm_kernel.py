"""CPU kernels of the product-key memory (``routing.layers.pkm``): the top-K selection over the
n_keys² sums of sub-key scores, and the gate-weighted sum of the selected values.

The torch selection (Lample et al. 2019's: top-K of each half, then the top K of the
candidate sums) costs three ``topk`` calls and several (B, M) gathers per step; at the
``routers`` bench's sizes (K = a quarter of the slots) it made PKM 4–5x slower than a dense
network of the same total width (issue 7). Here each row is handled at once: both halves are
sorted, and the K largest sums of the two sorted lists are popped from a max-heap holding
one (rank_b, rank_a) pair per rank of the b half (a K-way merge, O(K log K_half) per row),
ties going to the lexicographically lowest (rank_b, rank_a), which is the reference's order.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["pkm_select", "weighted_value_sum"]


@njit(cache=True)
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
    """Fill slot, pos_a, pos_b (B, k); False (rows unfinished) if a score is not finite."""
    for r in range(u_a.shape[0]):
        for j in range(n_keys):
            if not (np.isfinite(u_a[r, j]) and np.isfinite(u_b[r, j])):
                return False
    va = np.empty(k_half, u_a.dtype)
    vb = np.empty(k_half, u_a.dtype)
    ia = np.empty(k_half, np.int64)
    ib = np.empty(k_half, np.int64)
    # max-heap of (sum, pair) with pair = rank_b · k_half + rank_a: a larger sum first, then
    # the lower pair, i.e. the lexicographically lower (rank_b, rank_a)
    hs = np.empty(k_half, u_a.dtype)
    hp = np.empty(k_half, np.int64)
    for r in range(u_a.shape[0]):
        _sorted_half(u_a[r], k_half, va, ia)
        _sorted_half(u_b[r], k_half, vb, ib)
        size = k_half
        for i in range(k_half):  # descending in the b half: already a max-heap
            hs[i] = vb[i] + va[0]
            hp[i] = i * k_half
        for out in range(k):
            rb, ra = divmod(hp[0], k_half)
            slot[r, out] = ib[rb] * n_keys + ia[ra]
            pos_a[r, out] = ia[ra]
            pos_b[r, out] = ib[rb]
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
    return True


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
