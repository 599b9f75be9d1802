"""CPU kernels of the MoE layers: the expert bank's forward and backward in one Numba pass each,
and the top-K of short rows.

At the sizes the routers are compared at (d_in = 8, experts of 16–64 units, a batch of 1024)
a torch step of the expert bank is dozens of tiny ``mm``, ``relu``, index and ``cat`` calls
per expert, forward and backward, and their dispatch costs more than the arithmetic: it made
the MoEs slower than a dense network of the same total width (issue 7). Here each
(example, slot) assignment is evaluated once, grouped by expert (a counting sort), with the
hidden activations kept for the backward pass; the per-example sums over the K slots run in
slot order afterwards.

The kernels are serial on purpose: the bank's work at these sizes is a fraction of a
millisecond, and Numba's OpenMP workers keep spinning after a parallel region, which slowed
the torch operations that follow in the same training step by up to 10x on a 2-core machine.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["expert_mlp", "topk_rows", "TOPK_ROWS_MAX_K"]

TOPK_ROWS_MAX_K = 16  # insertion into a sorted buffer: O(n·k) per row, for small k only
# Reassociation lets LLVM vectorise the sums over the expert's units (without it every dot
# product is a serial chain: the backward ran 6x slower); no flag assumes finite values.
_REASSOC = {"reassoc", "contract"}


@njit(cache=True)
def _group_by_expert(idx, n_experts, order, starts):
    """Counting sort of the flattened assignments by expert (stable); False if an index is
    outside [0, n_experts)."""
    flat = idx.ravel()
    starts[:] = 0
    for p in range(flat.size):
        e = flat[p]
        if e < 0 or e >= n_experts:
            return False
        starts[e + 1] += 1
    for e in range(n_experts):
        starts[e + 1] += starts[e]
    fill = starts[:-1].copy()
    for p in range(flat.size):
        e = flat[p]
        order[fill[e]] = p
        fill[e] += 1
    return True


@njit(cache=True)
def _gather(x, gate, order, K, XT, gs):
    """Columns in expert order: XT[:, q] = x[b], gs[q] = gate[b, s] for assignment
    p = order[q] = b·K + s."""
    for q in range(order.size):
        p = order[q]
        b = p // K
        for j in range(x.shape[1]):
            XT[j, q] = x[b, j]
        gs[q] = gate[b, p - b * K]


@njit(cache=True)
def _gather_rows(rows, order, K, out):
    """out[:, q] = rows[order[q] // K]."""
    for q in range(order.size):
        b = order[q] // K
        for c in range(rows.shape[1]):
            out[c, q] = rows[b, c]


@njit(cache=True)
def _sum_slots(cols, order, K, out):
    """out[b] = Σ_s cols[:, q(b, s)], where order[q(b, s)] = b·K + s, summed in slot order."""
    pairs = np.empty((order.size, cols.shape[0]), cols.dtype)
    for q in range(order.size):
        for c in range(cols.shape[0]):
            pairs[order[q], c] = cols[c, q]
    for b in range(out.shape[0]):
        for c in range(out.shape[1]):
            acc = pairs[b * K, c]
            for s in range(1, K):
                acc += pairs[b * K + s, c]
            out[b, c] = acc


# The kernels below run expert by expert over its block of columns [s0, s1): every inner loop
# runs along the assignments, a long contiguous stride that LLVM vectorises whatever the
# expert's width (a loop over 16 units stayed scalar, 1.2 cycles per multiply-add). The loops
# index 1-D row views: written as H[g, q] the same loop ran 30x slower. (Chunking the columns
# to keep rows of H in L1 made no difference up to G = 128.)

@njit(cache=True, fastmath=_REASSOC)
def _forward(W1, W2, starts, XT, gs, H, Y):
    """H[:, q] = ReLU(W1_eᵀ x), Y[:, q] = gate · W2_eᵀ H[:, q], for the columns q of e."""
    E, d, G = W1.shape
    O = W2.shape[2]
    for e in range(E):
        s0, s1 = starts[e], starts[e + 1]
        n = s1 - s0
        ge = gs[s0:s1]
        for g in range(G):
            hg = H[g, s0:s1]
            hg[:] = 0
            for j in range(d):
                w, xj = W1[e, j, g], XT[j, s0:s1]
                for q in range(n):
                    hg[q] += w * xj[q]
            for q in range(n):
                if hg[q] < 0:  # ReLU; NaN stays NaN as in torch.relu
                    hg[q] = 0
        for o in range(O):
            yo = Y[o, s0:s1]
            yo[:] = 0
            for g in range(G):
                w, hg = W2[e, g, o], H[g, s0:s1]
                for q in range(n):
                    yo[q] += w * hg[q]
            for q in range(n):
                yo[q] *= ge[q]


@njit(cache=True, fastmath=_REASSOC)
def _backward(W1, W2, starts, XT, gs, H, dYT, T, dgs, dW1, dW2, dXT, zero):
    """Gradients from dYT[:, q] = dy of column q's example; T is (G, P) scratch. ``zero`` is 0
    in the arrays' dtype: a float64 literal would make the accumulators float64. dXT with no
    columns: x's gradient is not wanted (its loop is a third of the backward's work)."""
    E, d, G = W1.shape
    O = W2.shape[2]
    for e in range(E):
        s0, s1 = starts[e], starts[e + 1]
        n = s1 - s0
        ge, dge = gs[s0:s1], dgs[s0:s1]
        dge[:] = 0
        for g in range(G):
            tg, hg = T[g, s0:s1], H[g, s0:s1]
            tg[:] = 0                                    # t = W2_e dy
            for o in range(O):
                w, dyo = W2[e, g, o], dYT[o, s0:s1]
                acc = zero
                for q in range(n):
                    tg[q] += w * dyo[q]
                    acc += ge[q] * hg[q] * dyo[q]
                dW2[e, g, o] = acc                       # Σ gate · h ⊗ dy
            for q in range(n):
                dge[q] += hg[q] * tg[q]                  # d gate = hᵀ t
                tg[q] = ge[q] * tg[q] if hg[q] > 0 else zero  # dh; ReLU'(0) = 0, as torch
        for j in range(d):
            xj = XT[j, s0:s1]
            if dXT.shape[1] == 0:
                for g in range(G):
                    tg = T[g, s0:s1]
                    acc = zero
                    for q in range(n):
                        acc += xj[q] * tg[q]
                    dW1[e, j, g] = acc                   # Σ x ⊗ dh
                continue
            dxj = dXT[j, s0:s1]
            dxj[:] = 0
            for g in range(G):
                w, tg = W1[e, j, g], T[g, s0:s1]
                acc = zero
                for q in range(n):
                    dxj[q] += w * tg[q]                  # dx = W1_e dh
                    acc += xj[q] * tg[q]
                dW1[e, j, g] = acc                       # Σ x ⊗ dh


@njit(cache=True)
def _bank_forward(x, idx, gate, W1, W2):
    """Forward pass: (ok, y, state) with state = (order, starts, XT, gs, H) for the backward;
    ok is False (and nothing computed) if an expert index is outside [0, E)."""
    (B, K), (E, d, G), O = idx.shape, W1.shape, W2.shape[2]
    P = B * K
    order = np.empty(P, np.int64)
    starts = np.empty(E + 1, np.int64)
    XT, gs = np.empty((d, P), x.dtype), np.empty(P, x.dtype)
    H, Y = np.empty((G, P), x.dtype), np.empty((O, P), x.dtype)
    y = np.empty((B, O), x.dtype)
    ok = _group_by_expert(idx, E, order, starts)
    if ok:
        _gather(x, gate, order, K, XT, gs)
        _forward(W1, W2, starts, XT, gs, H, Y)
        _sum_slots(Y, order, K, y)
    return ok, y, (order, starts, XT, gs, H)


@njit(cache=True)
def _bank_backward(W1, W2, state, dy, K, zero, want_dx):
    """Backward pass: (dx, dgate, dW1, dW2) from the forward's state and dy (B, d_out); dx
    has no rows unless ``want_dx``."""
    order, starts, XT, gs, H = state
    B, (d, P) = dy.shape[0], XT.shape
    dYT = np.empty((dy.shape[1], P), XT.dtype)
    _gather_rows(dy, order, K, dYT)
    T, dgs = np.empty_like(H), np.empty(P, XT.dtype)
    dXT = np.empty((d, P if want_dx else 0), XT.dtype)
    dW1, dW2 = np.empty_like(W1), np.empty_like(W2)
    _backward(W1, W2, starts, XT, gs, H, dYT, T, dgs, dW1, dW2, dXT, zero)
    dx = np.empty((B if want_dx else 0, d), XT.dtype)
    if want_dx:
        _sum_slots(dXT, order, K, dx)
    dgate = np.empty(P, XT.dtype)
    dgate[order] = dgs
    return dx, dgate.reshape(B, K), dW1, dW2


def _arrays(*tensors):
    return [t.detach().contiguous().numpy() for t in tensors]


class _ExpertMLP(torch.autograd.Function):
    """y_b = Σ_s gate[b, s] · W2_eᵀ ReLU(W1_eᵀ x_b), e = idx[b, s], on CPU tensors."""

    @staticmethod
    def forward(ctx, x, idx, gate, W1, W2):
        ok, y, state = _bank_forward(*_arrays(x, idx, gate, W1, W2))
        if not ok:
            raise IndexError(f"expert_idx must lie in [0, {W1.shape[0]}), got "
                             f"[{int(idx.min())}, {int(idx.max())}]")
        ctx.save_for_backward(W1, W2)
        ctx.kernel_state = state, idx.shape[1]
        return torch.from_numpy(y)

    @staticmethod
    def backward(ctx, dy):
        W1, W2 = ctx.saved_tensors
        state, K = ctx.kernel_state
        w1, w2, dya = _arrays(W1, W2, dy)
        want_dx = ctx.needs_input_grad[0]
        grads = _bank_backward(w1, w2, state, dya, K, w1.dtype.type(0), want_dx)
        dx, dgate, dW1, dW2 = (torch.from_numpy(g) for g in grads)
        return dx if want_dx else None, None, dgate, dW1, dW2


def expert_mlp(x: torch.Tensor, expert_idx: torch.Tensor, gate: torch.Tensor,
               W1: torch.Tensor, W2: torch.Tensor) -> torch.Tensor:
    """The expert bank on the CPU: y_b = Σ_s gate[b, s] · W2_eᵀ ReLU(W1_eᵀ x_b),
    e = expert_idx[b, s] (Csordás et al. 2023 §3.3, Eq. 11), differentiable in x, gate, W1
    and W2 (once; no double backward).

    Arguments:
        x: (B, d_in) float32 or float64 CPU tensor.
        expert_idx: (B, K) int64, entries in [0, E); repeats within a row are allowed.
        gate: (B, K), x's dtype.
        W1: (E, d_in, G), W2: (E, G, d_out), x's dtype.

    Returns:
        (B, d_out), x's dtype.

    Raises:
        IndexError: if an expert index is outside [0, E).
    """
    return _ExpertMLP.apply(x, expert_idx, gate, W1, W2)


@njit(cache=True)
def _topk_rows(scores, k, out):
    n = scores.shape[1]
    vals = np.empty(k, scores.dtype)
    for r in range(scores.shape[0]):
        filled = 0
        for j in range(n):
            v = scores[r, j]
            v_nan = np.isnan(v)
            # position of v among the kept: after every kept value >= v (NaN counts as the
            # largest value, equal to other NaN), so ties keep the lower index first
            pos = filled
            while pos > 0:
                w = vals[pos - 1]
                if np.isnan(w) or (not v_nan and w >= v):
                    break
                pos -= 1
            if pos >= k:
                continue
            last = min(filled, k - 1)
            for m in range(last, pos, -1):
                vals[m] = vals[m - 1]
                out[r, m] = out[r, m - 1]
            vals[pos] = v
            out[r, pos] = j
            if filled < k:
                filled += 1


def topk_rows(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the k largest entries of each row, in descending order, ties going to the
    lowest index and NaN counted as larger than any number (the order of a stable descending
    ``torch.sort``), for CPU rows and small k: the MoE routers' expert selection (Csordás et
    al. 2023 §3.3; Fedus et al. 2022).

    Arguments:
        scores: (B, n) float32 or float64 CPU tensor.
        k: 1 <= k <= min(n, ``TOPK_ROWS_MAX_K``) (insertion costs O(n·k) per row).

    Returns:
        (B, k) int64 tensor; no gradient.

    Raises:
        ValueError: if k is out of that range.
    """
    n = scores.shape[1]
    if not 1 <= k <= min(n, TOPK_ROWS_MAX_K):
        raise ValueError(f"k must be in [1, {min(n, TOPK_ROWS_MAX_K)}], got {k}")
    out = np.empty((scores.shape[0], k), np.int64)
    _topk_rows(scores.detach().contiguous().numpy(), k, out)
    return torch.from_numpy(out)
