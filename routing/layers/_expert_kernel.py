"""CPU kernels of the MoE layers: the expert bank's forward and backward in one Numba pass each,
the top-K of short rows, and the whole σ-MoE / top-k MoE layer (router, top-K, gates, bank,
auxiliary loss) as one autograd node (``moe_forward``).

At the sizes the routers are compared at (d_in = 8, experts of 16–64 units, a batch of 1024)
a torch step of the expert bank is dozens of tiny ``mm``, ``relu``, index and ``cat`` calls
per expert, forward and backward, and their dispatch costs more than the arithmetic: it made
the MoEs slower than a dense network of the same total width. Here each
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

from routing._projection import FEW, top_of_few

__all__ = ["AUX_LOSSES", "GATES", "expert_mlp", "moe_forward", "topk_rows", "TOPK_ROWS_MAX_K"]

TOPK_ROWS_MAX_K = 16  # beyond FEW scores, insertion into a sorted buffer: O(n·k) per row
# Reassociation lets LLVM vectorise the sums over the expert's units (without it every dot
# product is a serial chain: the backward ran 6x slower); no flag assumes finite values.
# A reassociated sum must sit in a loop that stores nothing: where a loop also writes to an
# array, LLVM guards the vector loop by a runtime check that the written array does not lie
# within a few vectors after one it reads, and runs the loop serially when it does. The sum
# is then taken in another order, so its last bits depended on where the allocator had put
# the arrays (the same COMET step gave outputs differing by an ulp between calls); written
# apart, the sum's order depends on its length alone. (The shared kernels of all three
# router kernel modules use this flag set.)
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
                for q in range(n):
                    tg[q] += w * dyo[q]
                acc = zero  # a loop of its own: a sum beside a store (see _REASSOC)
                for q in range(n):
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
                for q in range(n):
                    dxj[q] += w * tg[q]                  # dx = W1_e dh
                acc = zero
                for q in range(n):
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
    """``topk_rows`` into out (B, k): rows of at most FEW scores without NaN ranked in
    registers (``top_of_few``: 0.44x the time of the insertion at 16 experts, k = 4), the
    others by insertion into a sorted buffer."""
    n = scores.shape[1]
    vals = np.empty(k, scores.dtype)
    row = np.empty(FEW, scores.dtype)  # whole vectors are read
    slots = np.empty(FEW + 1, np.int64)
    for r in range(scores.shape[0]):
        if n <= FEW:
            has_nan = False
            for j in range(n):
                row[j] = scores[r, j]
                has_nan |= row[j] != row[j]
            if not has_nan:
                top_of_few(row, n, k, slots)
                for s in range(k):
                    out[r, s] = slots[s]
                continue
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


# -- the whole MoE layer in one autograd node -------------------------------------------------
# σ-MoE and top-k MoE written as torch operations around the bank run a dozen small nodes per
# step besides it (the router's matmul, a gather and a sigmoid for the gates, a softmax and
# five reductions for the auxiliary loss, and their backward nodes), each costing more in
# dispatch than its arithmetic at these sizes; at 256 units they trained at 0.9-1.0x the speed
# of a dense network of the same total width. Here the router, the top-k, the gates,
# the bank and the auxiliary loss are one node forward and one backward.

GATES = ("sigmoid", "softmax")  # σ-MoE's σ(logit), top-k MoE's softmax probability
AUX_LOSSES = ("entropy", "load_balance")


@njit(cache=True)
def _router_forward(logits, gates_of, probs, k, idx, gate, mean_p, count):
    """idx = the top k logits of each row (the order and tie rule of ``topk_rows``), their
    gates gate[b, s] = gates_of[b, idx[b, s]] (the sigmoid, or the softmax, of the logits),
    and for the auxiliary losses the mean mean_p (E,) float64 of the rows of the softmax
    ``probs`` and each expert's count (E,) int64 of selections (numpy's float64 sum over
    the rows alone took about 35 us at 1024 rows and 16 experts)."""
    _topk_rows(logits, k, idx)
    mean_p[:] = 0
    count[:] = 0
    for b in range(idx.shape[0]):
        for s in range(k):
            gate[b, s] = gates_of[b, idx[b, s]]
            count[idx[b, s]] += 1
        for e in range(mean_p.shape[0]):
            mean_p[e] += probs[b, e]
    mean_p /= max(idx.shape[0], 1)


@njit(cache=True)
def _aux_loss(mean_p, count, n, k, entropy, coef):
    """(value, gradient per probability entry (E,)) of the auxiliary loss from
    ``_router_forward``'s mean_p and count, n = max(B, 1) rows: entropy coef · Σ_e p̄_e log p̄_e
    (0 log 0 = 0), or load balance coef · E · Σ_e f_e p̄_e with f_e = count_e / (n k)."""
    E = mean_p.shape[0]
    grad = np.empty(E)
    value = 0.0
    for e in range(E):
        if entropy:
            log_p = np.log(mean_p[e]) if mean_p[e] > 0 else 0.0
            value += mean_p[e] * log_p
            grad[e] = coef * (log_p + 1.0) / n
        else:
            f = count[e] / (n * k)
            value += f * mean_p[e]
            grad[e] = coef * E * f / n
    return coef * (value if entropy else E * value), grad


@njit(cache=True, fastmath=_REASSOC)
def _router_backward(x, router, sig, probs, idx, dgate, sigmoid_gate, dprobs_all, dx,
                     drouter):
    """drouter (and dx += when dx has rows) from the gates' gradient dgate (B, k) and a
    gradient dprobs_all (E,) shared by every row's softmax probabilities (the auxiliary
    loss's); sig: the logits' sigmoid (the gates) when ``sigmoid_gate``."""
    B, d = x.shape
    E = router.shape[0]
    k = idx.shape[1]
    one, zero = x.dtype.type(1), x.dtype.type(0)
    drouter[:] = 0
    dprobs = np.empty(E, x.dtype)
    dlog = np.empty(E, x.dtype)
    for b in range(B):
        for e in range(E):
            dprobs[e] = dprobs_all[e]
            dlog[e] = zero
        for s in range(k):
            e = idx[b, s]
            if sigmoid_gate:
                dlog[e] += dgate[b, s] * sig[b, e] * (one - sig[b, e])
            else:
                dprobs[e] += dgate[b, s]
        inner = zero
        for e in range(E):
            inner += probs[b, e] * dprobs[e]
        for e in range(E):
            dlog[e] += probs[b, e] * (dprobs[e] - inner)  # the softmax's backward
            for j in range(d):
                drouter[e, j] += dlog[e] * x[b, j]
        if dx.shape[0] > 0:
            for j in range(d):
                acc = zero
                for e in range(E):
                    acc += dlog[e] * router[e, j]
                dx[b, j] += acc


class _FusedMoE(torch.autograd.Function):
    """(y, aux) of a MoE layer from ``moe_forward``'s precomputed state."""

    @staticmethod
    def forward(ctx, x, router, W1, W2, state):
        y, aux, saved = state
        ctx.save_for_backward(x, router, W1, W2)  # their versions are checked on use
        ctx.kernel_state = saved
        return torch.from_numpy(y), torch.full((), aux, dtype=x.dtype)

    @staticmethod
    def backward(ctx, dy, daux):
        x, router, W1, W2 = ctx.saved_tensors
        bank_state, sig, probs, idx, sigmoid_gate, aux_grad = ctx.kernel_state
        xa, ra, w1, w2, dya = _arrays(x, router, W1, W2, dy)
        want_dx = ctx.needs_input_grad[0]
        dx, dgate, dW1, dW2 = _bank_backward(w1, w2, bank_state, dya, idx.shape[1],
                                             w1.dtype.type(0), want_dx)
        drouter = np.empty_like(ra)
        dprobs_all = aux_grad * float(daux)  # (E,): d aux / d probs[b, e], every b
        _router_backward(xa, ra, sig, probs, idx, dgate, sigmoid_gate,
                         dprobs_all.astype(xa.dtype), dx, drouter)
        return (torch.from_numpy(dx) if want_dx else None, torch.from_numpy(drouter),
                torch.from_numpy(dW1), torch.from_numpy(dW2), None)


def moe_forward(x: torch.Tensor, router: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor,
                k: int, gate: str, aux: str, coef: float):
    """A whole MoE layer on the CPU in one autograd node: logits = x routerᵀ, the top k
    experts of each example by logit (ties to the lowest index, as ``topk_rows``), their
    gates, y_b = Σ_s gate[b, s] · W2_eᵀ ReLU(W1_eᵀ x_b) (``expert_mlp``) and the auxiliary loss;
    differentiable once in x, router, W1 and W2.

    Gates: "sigmoid" σ(logit) (σ-MoE, Csordás et al. 2023 §5) or "softmax" the probability
    softmax(logits)[e] (top-k MoE, Fedus et al. 2022 / Shazeer et al. 2017, without
    renormalisation). Auxiliary loss, with p = the row softmax and n = max(B, 1): "entropy"
    coef · Σ_e p̄_e log p̄_e, p̄ = Σ_b p_b / n (σ-MoE §5); "load_balance"
    coef · E · Σ_e f_e p̄_e, f_e = (examples routed to e) / (n k), a constant (Switch).

    Arguments:
        x: (B, d_in) float32 or float64 CPU tensor; router: (E, d_in); W1: (E, d_in, G);
            W2: (E, G, d_out); all of x's dtype.
        k: experts per example, 1 <= k <= min(E, ``TOPK_ROWS_MAX_K``).
        gate: one of ``GATES``; aux: one of ``AUX_LOSSES``; coef: the loss's weight >= 0.

    Returns:
        (y (B, d_out), aux_loss (0-d tensor), idx (B, k) int64 experts in descending logit).

    Raises:
        ValueError: if k, gate or aux is out of range.
    """
    E = router.shape[0]
    if not 1 <= k <= min(E, TOPK_ROWS_MAX_K):
        raise ValueError(f"k must be in [1, {min(E, TOPK_ROWS_MAX_K)}], got {k}")
    if gate not in GATES or aux not in AUX_LOSSES:
        raise ValueError(f"gate must be one of {GATES} and aux one of {AUX_LOSSES}, got "
                         f"{gate!r}, {aux!r}")
    # the logits and their softmax (and sigmoid) in torch, outside autograd: its vectorised
    # exp is several times faster than Numba's scalar one
    with torch.no_grad():
        logits = x @ router.T                                           # (B, E)
        probs = torch.softmax(logits, dim=1)
        sig = torch.sigmoid(logits) if gate == "sigmoid" else probs
    xa, w1, w2 = _arrays(x, W1, W2)
    logits, probs, sig = logits.numpy(), probs.numpy(), sig.numpy()
    B = xa.shape[0]
    idx, gates = np.empty((B, k), np.int64), np.empty((B, k), xa.dtype)
    sigmoid_gate = gate == "sigmoid"
    mean_p, count = np.empty(E), np.empty(E, np.int64)
    _router_forward(logits, sig, probs, k, idx, gates, mean_p, count)
    _, y, bank_state = _bank_forward(xa, idx, gates, w1, w2)  # idx is in range
    value, aux_grad = _aux_loss(mean_p, count, max(B, 1), k, aux == "entropy", float(coef))
    saved = bank_state, sig, probs, idx, sigmoid_gate, aux_grad
    y, loss = _FusedMoE.apply(x, router, W1, W2, (y, value, saved))
    return y, loss, torch.from_numpy(idx)
