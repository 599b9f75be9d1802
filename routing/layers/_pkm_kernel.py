"""CPU kernels of the product-key memory (``routing.layers.pkm``): the ordered top-K selection
over the n_keys² sums of sub-key scores (``pkm_select``, behind ``PKM.route``), and the whole
layer fused into one autograd node, forward and backward (``pkm_forward``, behind
``PKM.forward``; see the section "the fused layer" below).

The torch selection (Lample et al. 2019's: top-K of each half, then the top K of the
candidate sums) costs three ``topk`` calls and several (B, M) gathers per step; at the
``routers`` bench's sizes (K = a quarter of the slots) it made PKM 4–5x slower than a dense
network of the same total width. Here each row is handled at once: both halves are
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

from routing._projection import (BLOCK, FEW, LANES, compress_in_range, count_in_range, min_max,
                                 packed_rows, project_block)
from routing._select import bracket_quantiles, kth_largest, kth_largest_guessed, mean_std
from routing.layers._expert_kernel import _REASSOC

__all__ = ["pkm_forward", "pkm_select"]

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


# -- the fused layer: query, sub-key scores, selection, value sum, and their backward ----------
# Written as torch operations plus the selection above, a PKM training step was a dozen
# autograd nodes (the query's matmul, the sub-key einsum's batched matmuls and reshapes, two
# gathers and their scatter backward, the ReLU) around the kernels, and trained at 0.37-0.48x
# the speed of a dense network of the same total width. Here a step is one node: the
# forward takes the queries and the 2·n_keys sub-key scores of the batch as two matmuls outside
# autograd, then, per example, the K winners among the candidate sums and y; the backward
# takes the gradients of the values, the sub-keys and the query projection (and of x when it
# needs one) in one pass over the examples.
#
# The winners are found by threshold, not by the ordered merge: the t = K-th largest of the
# candidate sums (a bisection inside a bracket guessed from the sums' mean and standard
# deviation, which are exact from the two halves' moments), then every sum >= t. The sums'
# order does not matter to y, and a merge pops its K winners one at a time (17 µs per example
# at 32 keys, K = 256, against a few µs here). When sums equal t are more than the K-th place
# needs, the row's winners come from the merge, whose tie rule (the lowest (rank in b, rank in
# a)) is the torch path's; so the winners are always the same set as ``pkm_select``'s.
# Candidates: with K >= n_keys every one of the n_keys² sums; else the sums of the sub-keys
# scoring at least the K-th best of their half (ties kept: a superset of Lample et al.'s K²,
# still containing the top K, since a sum whose half scores below its K-th best is beaten by K
# sums in its own row or column).
# Winners are stored as codes (rank-free pairs) pos_b << shift | pos_a, shift = bits of
# n_keys - 1, so the backward finds both halves with a shift and a mask, not a division.
# Full mode (every sum a candidate, ReLU, d_out = 1 and at least one slot in 16 a winner,
# e.g. the routers bench's K = n_keys²/4): the winners are the mask sum >= t, and the value
# sum and the backward run over all n_keys² slots in vector operations rather than over the
# K winners one at a time (the selection reads every sum anyway); rows whose winners the merge
# chose keep the one-at-a-time path. Measured at n_keys = 16, K = 64: the backward kernel
# 0.7 -> 0.4 ms per 1024 examples, timed inside a training loop.


@njit(cache=True, inline="always")
def _top_of_half(u, n, k_half, scratch, out_v, out_j):
    """The entries of u[:n] at least its k_half-th largest (k_half < n), in index order, into
    out_v / out_j; returns how many (>= k_half: ties are kept)."""
    for j in range(n):
        scratch[j] = u[j]
    t = kth_largest(scratch, n, k_half)
    return compress_in_range(u, n, t, None, 0, out_v, out_j)


@njit(cache=True, inline="always")
def _gates(scores, k, relu, out):
    """out[:k] = ReLU(scores[:k]), or their softmax."""
    if relu:
        for s in range(k):
            out[s] = max(scores[s], scores.dtype.type(0))
        return
    top = scores[0]
    for s in range(k):
        top = max(top, scores[s])
    for s in range(k):
        out[s] = np.exp(scores[s] - top)
    total = scores.dtype.type(0)  # a loop of its own: a sum beside a store (see _REASSOC)
    for s in range(k):
        total += out[s]
    for s in range(k):
        out[s] /= total


@njit(cache=True, fastmath=_REASSOC)
def _fused_forward(u, values, k, relu, quantiles, shift, code, score, y, full, t_rows, tied):
    """Forward of the fused PKM for every row of the sub-key scores u (2, B, n_keys) (u[0]:
    the a half, u[1]: the b half): the k winners' codes and scores (row r at
    code[r·k : r·k + k], in no particular order; code and score are flat, with LANES entries
    of padding at the end, so that the winners are compressed straight into them) and y.
    False if a sub-key score, or the sum of the two largest magnitudes of a row's halves, is
    not finite (rows left unfinished). quantiles: (z_lo, z_in_lo, z_in_hi, z_hi) of
    ``bracket_quantiles`` for the k-th largest of k_half² sums.

    ``full`` (every sum a candidate, ReLU, d_out = 1; see ``pkm_forward``): y sums the
    masked products over all n_keys² slots in vector operations, not the k winners one at a
    time, and each row's k-th largest sum and whether ties made the merge decide go to
    t_rows (B,) and tied (B,) for the backward; only the tied rows' codes and scores are
    written (``_full_mode_codes`` writes the others' codes when they are asked for).
    Finite sub-key scores whose sums cannot overflow are told by the halves' moments; the
    exact check (min, max and a count per half) runs only when those do not show it (it
    took a quarter of the kernel)."""
    _, B, n = u.shape
    d_out = values.shape[1]
    k_half = min(k, n)
    dt = u.dtype.type
    inf, zero = dt(np.inf), dt(0)
    ua, ub = np.empty(n + LANES, u.dtype), np.empty(n + LANES, u.dtype)
    sa, sb = np.empty(n + LANES, u.dtype), np.empty(n + LANES, u.dtype)
    ja, jb = np.empty(n + LANES, np.int32), np.empty(n + LANES, np.int32)
    every = np.arange(n + LANES).astype(np.int32)
    scratch = np.empty(n, u.dtype)
    cap = k_half * k_half  # candidate sums without ties in the halves
    sums = np.empty(cap + LANES, u.dtype)
    # the selection's scratch: room for the FEW values it ranks in registers
    small = np.empty(max(cap, FEW) + LANES, u.dtype)
    inner = np.empty(max(cap, FEW) + LANES, u.dtype)
    codes = np.empty(cap + LANES, np.int32)
    gate = np.empty(k, u.dtype)
    # the ordered merge, for rows with ties at the k-th largest sum
    va, vb = np.empty(k_half, u.dtype), np.empty(k_half, u.dtype)
    ia, ib = np.empty(k_half, np.int64), np.empty(k_half, np.int64)
    frontier, ranks = np.empty(k_half, u.dtype), np.empty(k_half, np.int64)
    m_slot, m_pa, m_pb = (np.empty(k, np.int64), np.empty(k, np.int64),
                          np.empty(k, np.int64))
    mask = (1 << shift) - 1
    root_n, bound = np.sqrt(dt(n)), dt(np.finfo(u.dtype).max / 16)
    for r in range(B):
        out_v, out_j = score[r * k:r * k + k + LANES], code[r * k:r * k + k + LANES]
        for j in range(n):
            ua[j] = u[0, r, j]
            ub[j] = u[1, r, j]
        # finite halves whose sums cannot overflow, shown by their moments: every |u_j| is at
        # most |mean| + sqrt(n)·std (NaN or inf make the moments so, and a huge spread
        # overflows them); otherwise, or within 16x of the largest float (a margin for the
        # moments' rounding), the exact check
        mean_a, sd_a = mean_std(ua, n)
        mean_b, sd_b = mean_std(ub, n)
        if not (abs(mean_a) + root_n * sd_a + abs(mean_b) + root_n * sd_b < bound):
            lo_a, hi_a = min_max(ua, n)
            lo_b, hi_b = min_max(ub, n)
            if not (-inf < lo_a and hi_a < inf and -inf < lo_b and hi_b < inf
                    and count_in_range(ua, n, lo_a, None) == n
                    and count_in_range(ub, n, lo_b, None) == n
                    and max(-lo_a, hi_a) + max(-lo_b, hi_b) < inf):
                return False
        if k_half < n:
            na = _top_of_half(ua, n, k_half, scratch, sa, ja)
            nb = _top_of_half(ub, n, k_half, scratch, sb, jb)
            va_a, ix_a, va_b, ix_b = sa, ja, sb, jb
        else:  # every sub-key is a candidate
            na = nb = n
            va_a, ix_a, va_b, ix_b = ua, every, ub, every
        merge = na * nb > cap  # ties in a half: too many candidates, let the merge decide
        t = zero
        if not merge:
            # the candidate sums, row-major in (pos_b, pos_a)
            m = 0
            for p in range(nb):
                vb_p, base = va_b[p], ix_b[p] << shift
                if full:  # no codes: the winners are a mask (``_full_mode_codes``)
                    for s in range(na):
                        sums[np.uintp(m + s)] = vb_p + va_a[s]
                else:
                    for s in range(na):
                        at = np.uintp(m + s)  # unsigned: no wraparound test, so vectorised
                        sums[at] = vb_p + va_a[s]
                        codes[at] = base | ix_a[s]
                m += na
            # the k-th largest, in a bracket guessed from their mean and spread, which are the
            # sums of the halves' moments
            if k_half < n:
                mean_a, sd_a = mean_std(va_a, na)
                mean_b, sd_b = mean_std(va_b, nb)
            t = kth_largest_guessed(sums, m, k, mean_a + mean_b,
                                    np.sqrt(sd_a * sd_a + sd_b * sd_b), quantiles, inner, small)
            merge = count_in_range(sums, m, t, None) != k
            if not (merge or full):
                compress_in_range(sums, m, t, None, codes, out_v, out_j)
        if merge:  # ties at the k-th place: the merge's order decides, as in pkm_select
            _sorted_half(ua[:n], k_half, va, ia)
            _sorted_half(ub[:n], k_half, vb, ib)
            if k_half <= FRONTIER_MAX:
                _merge_by_scan(va, ia, vb, ib, k, n, frontier, ranks, m_slot, m_pa, m_pb)
            else:
                _merge_by_heap(va, ia, vb, ib, k, n, frontier, ranks, m_slot, m_pa, m_pb)
            for s in range(k):
                out_v[s] = ub[m_pb[s]] + ua[m_pa[s]]
                out_j[s] = np.int32((m_pb[s] << shift) | m_pa[s])
        if full:
            t_rows[r], tied[r] = t, merge
            if not merge:  # y = Σ over the slots >= t of ReLU(sum) · value, as one mask
                acc = zero
                for j in range(n * n):
                    v = sums[j]
                    acc += values[j, 0] * (v if (v >= t) & (v > zero) else zero)
                y[r, 0] = acc
                continue
        _gates(out_v, k, relu, gate)
        if d_out == 1:  # register accumulators, not a chain through y's memory
            acc0 = acc1 = acc2 = acc3 = zero
            s = 0
            while s + 4 <= k:
                c0, c1, c2, c3 = out_j[s], out_j[s + 1], out_j[s + 2], out_j[s + 3]
                acc0 += gate[s] * values[np.uintp((c0 >> shift) * n + (c0 & mask)), 0]
                acc1 += gate[s + 1] * values[np.uintp((c1 >> shift) * n + (c1 & mask)), 0]
                acc2 += gate[s + 2] * values[np.uintp((c2 >> shift) * n + (c2 & mask)), 0]
                acc3 += gate[s + 3] * values[np.uintp((c3 >> shift) * n + (c3 & mask)), 0]
                s += 4
            while s < k:
                c0 = out_j[s]
                acc0 += gate[s] * values[np.uintp((c0 >> shift) * n + (c0 & mask)), 0]
                s += 1
            y[r, 0] = (acc0 + acc1) + (acc2 + acc3)
            continue
        for o in range(d_out):
            y[r, o] = zero
        for s in range(k):
            c = out_j[s]
            slot = np.uintp((c >> shift) * n + (c & mask))
            for o in range(d_out):
                y[r, o] += gate[s] * values[slot, o]
    return True


@njit(cache=True)
def _full_mode_codes(u, t_rows, tied, shift, code):
    """The winners' codes of ``_fused_forward``'s full-mode rows without ties, which it does
    not write: every slot whose sum u_b[p] + u_a[j] (the forward's sums, bit for bit) is at
    least the row's k-th largest t_rows[r], row-major in (p, j), the order the forward's
    compression gives the other rows. code: (B, k) int32, those rows overwritten."""
    _, B, n = u.shape
    for r in range(B):
        if tied[r]:
            continue
        t, m = t_rows[r], 0
        for p in range(n):
            vb_p = u[1, r, p]
            for j in range(n):
                if vb_p + u[0, r, j] >= t:
                    code[r, m] = np.int32((p << shift) | j)
                    m += 1


COPIES = 4  # interleaved copies of the backward's sub-key score gradients (a power of 2)


@njit(cache=True, inline="always")
def _sparse_grads(dy, values, code, score, r, shift, relu, n, mask, gate, dgate, du_a, du_b,
                  dvalues):
    """Row r's k winners one at a time: dvalues[slot] += gate · dy, and the sub-key scores'
    gradients into du_a, du_b (COPIES interleaved copies: consecutive winners often share
    pos_b, and read-modify-writes of one address wait on each other's stores)."""
    k, d_out = code.shape[1], values.shape[1]
    zero = gate.dtype.type(0)
    _gates(score[r], k, relu, gate)
    inner = zero  # softmax: Σ gate · dgate
    for s in range(k):
        c = code[r, s]
        pa, pb = c & mask, c >> shift
        slot = np.uintp(pb * n + pa)
        if d_out == 1:
            acc = dy[r, 0] * values[slot, 0]
            dvalues[slot, 0] += gate[s] * dy[r, 0]
        else:
            acc = zero  # a loop of its own: a sum beside a store (see _REASSOC)
            for o in range(d_out):
                acc += dy[r, o] * values[slot, o]
            for o in range(d_out):
                dvalues[slot, o] += gate[s] * dy[r, o]
        if relu:  # ReLU'(0) = 0, as torch
            copy = s & (COPIES - 1)
            d = acc if gate[s] > zero else zero
            du_a[copy, pa] += d
            du_b[copy, pb] += d
        else:
            dgate[s] = acc
            inner += gate[s] * acc
    if not relu:
        for s in range(k):
            c = code[r, s]
            copy = s & (COPIES - 1)
            d = gate[s] * (dgate[s] - inner)
            du_a[copy, c & mask] += d
            du_b[copy, c >> shift] += d


@njit(cache=True, inline="always")
def _full_grads(dy, values, r, n, t_rows, u, col, row_d, du_a, du_b, dvalues):
    """Row r's winners as the mask sum >= t over all n_keys² slots (the forward's sums,
    rebuilt bit for bit from u), ReLU and d_out = 1: D = mask · ReLU' · value · dy,
    du_b = D's row sums, du_a its column sums (into copy 0), dvalues += mask · ReLU · dy;
    vector operations along each row of slots. Scratch: col and row_d, n entries each (a
    row of D is summed in a loop of its own, apart from the stores; see _REASSOC)."""
    zero = col.dtype.type(0)
    t, dyr = t_rows[r], dy[r, 0]
    for j in range(n):
        col[j] = zero
    for p in range(n):
        vb_p = u[1, r, p]
        for j in range(n):
            v = vb_p + u[0, r, j]
            on = (v >= t) & (v > zero)
            slot = np.uintp(p * n + j)
            d = values[slot, 0] * dyr if on else zero
            row_d[j] = d
            col[j] += d
            dvalues[slot, 0] += (v if on else zero) * dyr
        row = zero
        for j in range(n):
            row += row_d[j]
        du_b[0, p] = row
    for j in range(n):
        du_a[0, j] = col[j]


@njit(cache=True, fastmath=_REASSOC)
def _fused_backward(dy, x, wq_t, keys_t, values, code, score, qs, shift, relu,
                    dx, dwq, dkeys, dvalues, full, t_rows, tied, u):
    """Gradients of the fused PKM (dx only if dx has rows; keys transposed, (2, d_key / 2,
    n_keys), and their gradient dkeys in the keys' own layout, (2, n_keys, d_key / 2)) from
    the forward's code, score and qs:
    dgate = values[slot] · dy, dvalues[slot] += gate · dy, the sub-key scores' gradient du
    through ReLU (0 at 0, as torch) or the softmax, then dq = Σ_j du_j key_j,
    dkeys_j += du_j q_half, dwq += dq ⊗ x and dx = wqᵀ dq. ``full`` (see the forward):
    the rows without ties take their winners as one mask over all slots, in vector
    operations (``_full_grads``); the others, and every row otherwise, one at a time."""
    B, k = code.shape
    _, h, n = keys_t.shape
    d_key, d_in = 2 * h, x.shape[1]
    project, need_dx = wq_t.shape[0] > 0, dx.shape[0] > 0
    mask = (1 << shift) - 1
    zero = x.dtype.type(0)
    dwq[:] = 0
    dkeys_t = np.zeros(keys_t.shape, x.dtype)  # accumulated along the keys, then transposed
    dvalues[:] = 0
    du_a, du_b = np.zeros((COPIES, n), x.dtype), np.zeros((COPIES, n), x.dtype)
    du, col, row_d = np.empty(n, x.dtype), np.empty(n, x.dtype), np.empty(n, x.dtype)
    dq = np.empty(d_key, x.dtype)
    gate, dgate = np.empty(k, x.dtype), np.empty(k, x.dtype)
    for r in range(B):
        if full and not tied[r]:
            _full_grads(dy, values, r, n, t_rows, u, col, row_d, du_a, du_b, dvalues)
        else:
            _sparse_grads(dy, values, code, score, r, shift, relu, n, mask, gate, dgate,
                          du_a, du_b, dvalues)
        for half in range(2):
            part = du_a if half == 0 else du_b
            for j in range(n):
                g = zero
                for copy in range(COPIES):
                    g += part[copy, j]
                    part[copy, j] = zero
                du[j] = g
            for c in range(h):
                qc = qs[r, half * h + c]
                acc = zero  # a loop of its own: a sum beside a store (see _REASSOC)
                for j in range(n):
                    acc += du[j] * keys_t[half, c, j]
                dq[half * h + c] = acc
                for j in range(n):
                    dkeys_t[half, c, j] += du[j] * qc
        if project:
            for c in range(d_key):
                for i in range(d_in):
                    dwq[c, i] += dq[c] * x[r, i]
        if need_dx:
            for i in range(d_in):
                if project:
                    acc = zero
                    for c in range(d_key):
                        acc += wq_t[i, c] * dq[c]
                    dx[r, i] = acc
                else:
                    dx[r, i] = dq[i]
    for half in range(2):
        for j in range(n):
            for c in range(h):
                dkeys[half, j, c] = dkeys_t[half, c, j]


@njit(cache=True)
def _queries(x, query, keys, qs, u, keys_t, wq_t):
    """qs[r] = query x[r] (x[r] itself when query is empty), the sub-key scores u[half, r] =
    keys[half] qs[r, half·h:(half + 1)·h], and the transposes keys_t (2, h, n_keys) and
    wq_t (d_in, d_key) (if query is not empty) that the backward reads. Both products go
    BLOCK rows at a time through ``project_block`` (per-row loops ran scalar here, about
    0.07 ms at d_in = d_key = 8, n_keys = 16, B = 1024; two batched torch matmuls took as
    long with their Python and the conversions around them)."""
    B, d_in = x.shape
    _, n, h = keys.shape
    project = query.shape[0] > 0
    for half in range(2):
        for j in range(n):
            for c in range(h):
                keys_t[half, c, j] = keys[half, j, c]
    for c in range(query.shape[0]):
        for i in range(d_in):
            wq_t[i, c] = query[c, i]
    groups_q = packed_rows(query)
    groups_a, groups_b = packed_rows(keys[0]), packed_rows(keys[1])
    z_q = np.zeros((BLOCK, groups_q.shape[0] * LANES), x.dtype)
    z_u = np.zeros((BLOCK, groups_a.shape[0] * LANES), x.dtype)
    halves = np.empty((2, B, h), x.dtype)  # qs split into its halves, each contiguous
    for first in range(0, B, BLOCK):
        last = min(first + BLOCK, B)
        for g in range(groups_q.shape[0]):
            project_block(x, first, groups_q, g, z_q, g * LANES)
        for r in range(first, last):
            for half in range(2):
                for c in range(h):
                    q = z_q[r - first, half * h + c] if project else x[r, half * h + c]
                    qs[r, half * h + c] = q
                    halves[half, r, c] = q
        for half in range(2):
            groups = groups_a if half == 0 else groups_b
            for g in range(groups.shape[0]):
                project_block(halves[half], first, groups, g, z_u, g * LANES)
            for r in range(first, last):
                ur, zr = u[half, r], z_u[r - first]
                for j in range(n):
                    ur[j] = zr[j]


class _FusedPKM(torch.autograd.Function):
    """y = PKM(x) from the forward kernel's results (``state``), with the fused backward."""

    @staticmethod
    def forward(ctx, x, query, keys, values, state):
        y, kernel_state = state
        # their versions are checked on use; the backward reads the arrays in kernel_state
        ctx.save_for_backward(x, query, keys, values)
        ctx.kernel_state = kernel_state
        return torch.from_numpy(y)

    @staticmethod
    def backward(ctx, dy):
        _, query, keys, _ = ctx.saved_tensors  # their versions are checked here
        (code, score, qs, shift, relu, wq_t, keys_t, full, t_rows, tied, u, xa,
         va) = ctx.kernel_state
        dya = dy.detach().contiguous().numpy()
        need_dx = ctx.needs_input_grad[0]
        dx = np.empty(xa.shape if need_dx else (0, 0), xa.dtype)
        dwq, dkeys = np.empty(wq_t.shape[::-1], xa.dtype), np.empty(keys.shape, xa.dtype)
        dvalues = np.empty(va.shape, xa.dtype)
        _fused_backward(dya, xa, wq_t, keys_t, va, code, score, qs, shift, relu, dx, dwq,
                        dkeys, dvalues, full, t_rows, tied, u)
        return (torch.from_numpy(dx) if need_dx else None,
                torch.from_numpy(dwq) if query is not None else None, torch.from_numpy(dkeys),
                torch.from_numpy(dvalues), None)


# sub-key indices share an int32 code (pos_b << shift | pos_a): up to 2^15 keys per half
MAX_FUSED_KEYS = 1 << 15


def pkm_forward(x: torch.Tensor, query: torch.Tensor | None, keys: torch.Tensor,
                values: torch.Tensor, k: int, activation: str):
    """A product-key memory layer's output on the CPU in one fused autograd node
    (Lample et al. 2019 §3; Csordás et al. 2023 §3.2, Eq. 8): q = W_q x (or x), sub-key scores
    u_a = K_a q_a, u_b = K_b q_b, the k best slots among the n_keys² sums u_b[i] + u_a[j]
    (the same set as :func:`pkm_select`'s, ties included), y = Σ act(score) · values[slot].
    Differentiable once in x, query, keys and values.

    Arguments:
        x: (B, d_in) float32 or float64 CPU tensor.
        query: (d_key, d_in) of x's dtype, or None for q = x (then d_in = d_key).
        keys: (2, n_keys, d_key / 2), x's dtype, n_keys <= ``MAX_FUSED_KEYS``.
        values: (n_keys², d_out), x's dtype.
        k: 1 <= k <= n_keys².
        activation: "relu" or "softmax" (over the k selected scores).

    Returns:
        (y (B, d_out), slot): slot a function returning the (B, k) int64 selected slots
        (pos_b · n_keys + pos_a, in no particular order), computed only when called; or None
        when a sub-key score, or the sum of a row's two largest magnitudes, is not finite (the
        caller takes the torch path, whose order NaN and inf follow).

    Raises:
        ValueError: if k or n_keys is out of range, or the shapes do not fit.
    """
    B, d_in = x.shape
    _, n, h = keys.shape
    if activation not in ("relu", "softmax"):
        raise ValueError(f"activation must be 'relu' or 'softmax', got {activation!r}")
    if not 1 <= n <= MAX_FUSED_KEYS:
        raise ValueError(f"n_keys must be in [1, {MAX_FUSED_KEYS}] for the fused kernel, "
                         f"got {n}")
    if not 1 <= k <= n * n:
        raise ValueError(f"k must be in [1, {n * n}], got {k}")
    if (query is None and d_in != 2 * h) or (query is not None and query.shape != (2 * h, d_in)
                                             ) or values.shape[0] != n * n:
        raise ValueError(f"shapes do not fit: x {tuple(x.shape)}, query "
                         f"{None if query is None else tuple(query.shape)}, keys "
                         f"{tuple(keys.shape)}, values {tuple(values.shape)}")
    xa = x.detach().contiguous().numpy()
    va = values.detach().contiguous().numpy()
    ka = keys.detach().numpy()
    qa = query.detach().numpy() if query is not None else xa[:0]
    shift = (n - 1).bit_length()
    k_half = min(k, n)
    quantiles = bracket_quantiles(k_half * k_half, k)
    # torch's allocator: a fresh numpy array of a megabyte is mapped anew, and its page
    # faults took 0.4 ms per array and step
    code = torch.empty(B * k + LANES, dtype=torch.int32).numpy()
    score, y, qs, u = (torch.empty(shape, dtype=x.dtype).numpy()
                       for shape in (B * k + LANES, (B, va.shape[1]), (B, 2 * h), (2, B, n)))
    keys_t = np.empty((2, h, n), xa.dtype)
    wq_t = np.empty((d_in, 2 * h) if query is not None else (0, 0), xa.dtype)
    # the queries q (B, d_key) and sub-key scores u (2, B, n_keys): u[0] the a half, u[1]
    # the b half
    _queries(xa, qa, ka, qs, u, keys_t, wq_t)
    relu = activation == "relu"
    # every sum a candidate and at least one in 16 a winner: the value sum and the backward
    # run as one mask over all slots, in vector operations (5x fewer instructions than the
    # winners one at a time at n_keys = 16, k = 64)
    full = relu and k >= n and va.shape[1] == 1 and n * n <= 16 * k
    t_rows, tied = np.empty(B, xa.dtype), np.empty(B, np.bool_)
    if not _fused_forward(u, va, k, relu, quantiles, shift, code, score, y, full, t_rows,
                          tied):
        return None
    code, score = code[:B * k].reshape(B, k), score[:B * k].reshape(B, k)
    kernel_state = code, score, qs, shift, relu, wq_t, keys_t, full, t_rows, tied, u, xa, va
    y = _FusedPKM.apply(x, query, keys, values, (y, kernel_state))

    def slot():
        if full:
            _full_mode_codes(u, t_rows, tied, shift, code)
        c = torch.from_numpy(code).long()
        return (c >> shift) * n + (c & ((1 << shift) - 1))

    return y, slot
