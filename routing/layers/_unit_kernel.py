"""CPU kernels of the hidden-unit routers (COMET with one hidden layer, SDMLP): the exact
k-winner-take-all of each row, and a one-hidden-layer MLP evaluated on each example's k
winners only, forward and backward.

Written the torch way, these layers compute every unit's hidden activation, multiply it by a
(B, N) mask, and run the backward through the whole (B, N) matrices; ``torch.topk`` and the
mask's dtype copies alone took most of a COMET training step, which ran 5x slower than a dense
network of the same total width. Here the selection is one pass per row, and the
hidden layer is touched only at the k winners: forward, backward and the weight gradients
cost O(k · d_in) per example instead of O(N · d_in). The routing scores themselves (N per
example, they pick the winners) are still computed in full, but 8 rows at a time into a
scratch that stays in cache, never as a (B, N) matrix (a fresh 4 MB matrix per step cost
more in page faults than its matmul). The layers' forward is one kernel
(``routed_unit_mlp``): each row's winners, hidden units and outputs are computed while the
row is in cache, and only what the backward reads (the padded input, and the winners whose
ReLU passes gradient with their pre-activations) is written out.

The kernels are serial, like the expert bank's (``_expert_kernel``): at these sizes a step is
a millisecond or two, and Numba's parallel workers keep spinning after a parallel region and
slow the torch operations that follow.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import torch
from numba import njit

from routing.validation import check_finite_tensor
from routing._projection import (BLOCK, LANES, compress_in_range, count_in_range, max_below,
                                 min_max, packed_rows, project_block, row_axpy, row_dot)
from routing._select import bracket_quantiles, kth_largest_guessed, mean_std, write_winners
from routing.layers._expert_kernel import _REASSOC, _arrays

__all__ = ["kwta_scores", "normalised_rows", "project_nonnegative_unit_rows", "routed_unit_mlp",
           "unit_mlp"]



@njit(cache=True)
def _kwta_block_rows(X, V, n, k, quantiles, idx, vals, nxt, with_next, A, bias, u0, out_bias,
                     active, at_zero, y, xp, subtract_next, usage):
    """For every row x of X: the scores s = V x (V: (n, d)), computed for a block of BLOCK
    rows at a time into a scratch that stays in cache, and the k winners (increasing unit
    index), compressed into idx if it is not empty (flat, row r at [r·k, r·k + k), with
    LANES entries of padding at the end) and, if vals is not empty, their scores into vals
    (alike); ``with_next``: the (k+1)-th largest score into nxt (-inf when k = n); usage[j]
    += 1 for every winner j if usage is not empty.

    Unless y is empty, the one-hidden-layer MLP on each row's winners in the same pass
    (``_unit_row_masked`` under the mask scores >= the k-th, or ``_unit_row`` on the list
    of winners when a tie at the k-th makes the list necessary): output 0 plus out_bias[0]
    (if not empty) into y[:, 0] and the winners whose ReLU passes gradient into ``active``
    (``_Active``), from the pre-activations A x + bias (A: a second (n, d) matrix, projected
    in the same blocks; empty: V itself; bias empty: zero) minus max(nxt, 0) if
    ``subtract_next`` (SDMLP's inhibition). Unless xp is empty, X with zero columns
    appended into xp (B, a multiple of LANES: the rows the backward's vector updates read).
    False (rows left unfinished) if a score is NaN or infinite. quantiles: (z_lo, z_in_lo,
    z_in_hi, z_hi) of ``bracket_quantiles`` for the bracket guesses."""
    B = X.shape[0]
    groups, groups_a = packed_rows(V), packed_rows(A)
    width = groups.shape[0] * LANES  # >= n; the zero directions past n are never read
    z = np.zeros((BLOCK, width), X.dtype)
    z_a = np.zeros((BLOCK, groups_a.shape[0] * LANES), X.dtype)
    inner, small = np.empty(width + LANES, X.dtype), np.empty(width + LANES, X.dtype)
    units = np.arange(width + LANES).astype(np.int32)
    row_v = np.empty(k + LANES, X.dtype)  # the winners' scores, when vals is not wanted
    row_j = np.empty(k + LANES, np.int32)  # the winners, when idx is not wanted
    pre = np.empty(width + LANES, X.dtype)  # one row's pre-activations
    want_list = idx.shape[0] > 0 or vals.shape[0] > 0 or usage.shape[0] > 0
    inf, zero = X.dtype.type(np.inf), X.dtype.type(0)
    b = bias if bias.shape[0] > 0 else np.zeros(n, X.dtype)
    c = out_bias[0] if out_bias.shape[0] > 0 else zero
    lowest = _lowest_passing(at_zero, X)
    pos = 0
    for first in range(0, B, BLOCK):
        for g in range(groups.shape[0]):
            project_block(X, first, groups, g, z, g * LANES)
        for g in range(groups_a.shape[0]):
            project_block(X, first, groups_a, g, z_a, g * LANES)
        for r in range(first, min(first + BLOCK, B)):
            v = z[r - first]
            # the row's mean and spread guess the bracket; finite ones also show that every
            # score is finite (a NaN or inf makes the sums NaN or inf; an overflow of finite
            # scores is told apart by the exact check)
            mean, std = mean_std(v, n)
            if not (np.isfinite(mean) and np.isfinite(std)):
                lo, top = min_max(v, n)  # NaN: skipped by min_max, not counted below
                if not (-inf < lo and top < inf and count_in_range(v, n, lo, None) == n):
                    return False
            t = kth_largest_guessed(v, n, k, mean, std, quantiles, inner, small)
            n_at_least = count_in_range(v, n, t, None)  # k unless tied at t
            if with_next:  # t again if tied, else the largest score below t
                nxt[r] = t if n_at_least > k else max_below(v, n, t)
            # the winners as a list: when asked for, or to break a tie at t
            listed = want_list or n_at_least > k
            out_j = idx[r * k:r * k + k + LANES] if idx.shape[0] > 0 else row_j
            if listed:
                out_v = vals[r * k:r * k + k + LANES] if vals.shape[0] > 0 else row_v
                write_winners(v, n, k, t, n_at_least, units, out_v, out_j)
            if usage.shape[0] > 0:
                for s in range(k):
                    usage[out_j[s]] += 1
            if y.shape[0] > 0:  # while the row's scores are in cache
                offset = -max(nxt[r], zero) if subtract_next else zero
                scores = z_a[r - first] if groups_a.shape[0] > 0 else v
                room = active.pre[pos:pos + k + LANES], active.units[pos:pos + k + LANES]
                if n_at_least == k:  # the winners are the scores >= t: no list needed
                    y[r, 0] = _unit_row_masked(scores, v, t, n, b, offset, u0, pre) + c
                    pos += compress_in_range(pre, n, lowest, None, units, room[0], room[1])
                else:
                    y[r, 0] = _unit_row(scores, out_j, k, b, offset, u0, pre) + c
                    pos += compress_in_range(pre, k, lowest, None, out_j, room[0], room[1])
                active.ends[r] = pos
            if xp.shape[0] > 0:
                for q in range(xp.shape[1]):
                    xp[r, q] = X[r, q] if q < X.shape[1] else zero
    return True


@njit(cache=True, inline="always")
def _lowest_passing(at_zero, like):
    """The least pre-activation whose ReLU passes gradient: 0 if ``at_zero`` (clamp(min=0)),
    else the least positive float (torch.relu: above 0 only), in the dtype of the array
    ``like``."""
    zero = like.dtype.type(0)
    return zero if at_zero else np.nextafter(zero, like.dtype.type(1))


@njit(cache=True, fastmath=_REASSOC)
def _unit_row(scores, winners, k, bias, offset, u0, pre):
    """One example of the one-hidden-layer MLP at its winners: pre[s] = scores[j] + bias[j]
    + offset and the returned Σ_s u0[j] max(pre[s], 0), j = winners[s], scores the row's
    pre-activations without bias over all units (output 0; ``_later_outputs`` gives the
    others). A function of its own, not inlined: compiled with reassociation (the sum then
    vectorises; the selection kernel that calls it has none)."""
    zero = pre.dtype.type(0)
    acc = zero
    for s in range(k):
        j = np.uintp(winners[s])  # unsigned: no negative-index wraparound code
        p = scores[j] + bias[j] + offset
        pre[s] = p
        acc += u0[j] * max(p, zero)
    return acc


@njit(cache=True, fastmath=_REASSOC)
def _unit_row_masked(scores, v, t, n, bias, offset, u0, pre):
    """``_unit_row`` with the winners given as the units j whose routing score v[j] >= t
    (right when exactly k scores are, no tie at the k-th): pre[j] = scores[j] + bias[j] +
    offset at the winners and -inf elsewhere (no ReLU passes it), and the returned
    Σ_j u0[j] max(pre[j], 0), over all n units in contiguous vector operations. At width
    256, k = 64 this takes less time than the winners' gathers of ``_unit_row``.

    The sum has a loop of its own that stores nothing: in one loop with the stores to
    ``pre``, LLVM guards the vectorised (reassociated) sum by a runtime check that ``pre``
    does not alias the arrays read, and falls back to a serial sum when ``pre`` happens to
    lie within a few vectors after one of them. The sum's order, hence its last bits, then
    depended on where the allocator had put the scratch (``_expert_kernel._REASSOC``)."""
    zero = pre.dtype.type(0)
    blocked = pre.dtype.type(-np.inf)
    for j in range(n):
        p = scores[j] + bias[j] + offset
        pre[j] = p if v[j] >= t else blocked
    acc = zero
    for j in range(n):
        acc += u0[j] * max(pre[j], zero)
    return acc


@njit(cache=True, fastmath=_REASSOC)
def _later_outputs(active, U, out_bias, y):
    """y[b, o] = Σ U[o, j] p over the active winners (j, p) of row b (``_Active``; the
    others' ReLU is 0), plus out_bias[o] if it is not empty, for the outputs o >= 1."""
    start = 0
    for b in range(y.shape[0]):
        end = active.ends[b]
        for o in range(1, U.shape[0]):
            uo = U[o]
            acc = y.dtype.type(0)
            for q in range(start, end):
                acc += uo[np.uintp(active.units[q])] * max(active.pre[q], y.dtype.type(0))
            y[b, o] = acc + out_bias[o] if out_bias.shape[0] > 0 else acc
        start = end


def kwta_scores(x: torch.Tensor, W: torch.Tensor, k: int, with_next: bool = False):
    """Exact k-winner-take-all of the scores s = W x of each row x, on the CPU: the k largest
    scores, equal scores won by the lowest unit index (the rule of ``routing.topk`` and
    ``routing.torch_twins``), and the (k+1)-th largest score, which SDMLP's Top-K subtracts
    (Bricken et al. 2023, Eq. 4; COMET §4, Eq. 3, is the same C_k).

    The scores are computed for 8 rows at a time into a scratch that stays in cache
    (``routing._projection.project_block``: sums of fused multiply-adds in input order, so
    they may differ from ``x @ W.T`` in the last bits), never as a (B, N) matrix; the k-th
    largest score of a row is found by bisection inside a bracket guessed from the row's mean
    and standard deviation (``routing._select``).

    Arguments:
        x: (B, d) float32 or float64 CPU tensor; W: (N, d) of x's dtype (no gradient is
            taken through either).
        k: 1 <= k <= N.
        with_next: also return the (k+1)-th largest scores.

    Returns:
        (idx, scores, next_score): idx (B, k) int32, each row's winners in increasing unit
        index (the order ``torch.nonzero`` of the mask gives); scores (B, k) their scores, of
        x's dtype; next_score (B,) the (k+1)-th largest score of each row counting ties
        (-inf when k = N), or None without ``with_next``.

    Raises:
        ValueError: if k is outside 1..N, x and W are not 2-D float32/float64 CPU tensors of
            one dtype with d columns each, or a score is NaN or infinite.
    """
    xa, n = _routing_operands(x, W, k)
    B = xa.shape[0]
    # flat, padded: the kernel compresses each row's winners straight into them
    idx = torch.empty(B * k + LANES, dtype=torch.int32).numpy()
    vals = torch.empty(B * k + LANES, dtype=x.dtype).numpy()
    nxt = np.empty(B if with_next else 0, xa.dtype)
    none = nxt[:0]
    if B and not _kwta_block_rows(xa, W.detach().numpy(), n, k, bracket_quantiles(n, k), idx,
                                  vals, nxt, with_next, xa[:0], none, none, none,
                                  _active(0, 0, xa.dtype), False, xa[:0], xa[:0], False,
                                  none.astype(np.float64)):
        raise ValueError("the scores W x must be finite; x or W has NaN or infinite entries")
    idx, vals = idx[:B * k].reshape(B, k), vals[:B * k].reshape(B, k)
    return (torch.from_numpy(idx), torch.from_numpy(vals),
            torch.from_numpy(nxt) if with_next else None)


def _routing_operands(x: torch.Tensor, V: torch.Tensor, k: int, *more: torch.Tensor):
    """(x as a C-contiguous array, N) after checking x (B, d), V and the matrices ``more``
    (N, d each) and k as ``kwta_scores`` documents."""
    ok = isinstance(x, torch.Tensor) and x.dtype in (torch.float32, torch.float64)
    for t in (x, V) + more:  # a loop: generator expressions cost microseconds a call
        ok = (ok and isinstance(t, torch.Tensor) and t.ndim == 2 and t.dtype == x.dtype
              and t.device.type == "cpu" and t.shape[1] == x.shape[1]
              and (t is x or t.shape[0] == V.shape[0]))
    if not ok:
        raise ValueError("x (B, d) and the unit matrices (N, d) must be 2-D float32 or "
                         "float64 CPU tensors of one dtype")
    n = V.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, {n}] (the number of units), got {k}")
    return (x.detach() if x.requires_grad else x).contiguous().numpy(), n


def routed_unit_mlp(x: torch.Tensor, V: torch.Tensor | None, k: int, W: torch.Tensor,
                    bias: torch.Tensor | None, U: torch.Tensor,
                    out_bias: torch.Tensor | None = None, subtract_next: bool = False,
                    open_at_zero: bool = False, usage: torch.Tensor | None = None,
                    winners: bool = True):
    """A one-hidden-layer ReLU MLP at each example's k winners, on the CPU:

        y_b = Σ_{j ∈ C_k(s_b)} U[:, j] · ReLU(W_j · x_b + bias_j − I_b) (+ out_bias)

    with the routing scores s_b = V x_b of a fixed matrix V (COMET §4, Eqs. 4–8 with one
    hidden layer: the winners of the frozen routing network, and the backbone evaluated at
    them only), or, with V None, the MLP's own W x_b (SDMLP's Top-K, Bricken et al. 2023
    §4); I_b = max(s_(k+1), 0), the (k+1)-th largest score, with ``subtract_next`` (SDMLP's
    Eq. 4; V None and no bias), else 0. The winners are ``kwta_scores(x, V or W, k)``'s, and
    the MLP's forward runs in the same kernel: W x is projected in the same blocks as V x,
    and each row's hidden units and outputs are computed while its winners are in cache.
    Only what the backward reads is written out: the padded x and the winners whose ReLU
    passes gradient, with their pre-activations (in a ReLU layer about half of the winners;
    the backward touches no other). Differentiable in x (through W x; the winners and I are
    constants), W, bias, U and out_bias, with ``unit_mlp``'s gradients (``open_at_zero`` as
    there); V takes no gradient.

    Without a tie at the k-th score the winners are the scores >= it, and the hidden units
    are computed over all N units under that mask in contiguous vector operations
    (``_unit_row_masked``), with no list of winners unless one is asked for (``winners``,
    ``usage``); a tie, rare with real-valued scores, takes the list.

    Measured in a training loop at width 256, k = 64, 1024 rows (COMET): with the fused
    forward a step took 0.92-0.96x the time of ``kwta_scores`` followed by ``unit_mlp``;
    keeping the active winners only, not all winners and their pre-activations, and a leaner
    autograd node then took it to 0.85-0.89x (medians of three runs), and the masked hidden
    units to 0.81-0.84x.

    Arguments:
        x: (B, d_in) float32 or float64 CPU tensor.
        V: (N, d_in) or None; W: (N, d_in); bias: (N,) or None (zero); U: (d_out, N);
            out_bias: (d_out,) or None; all of x's dtype. V takes no gradient.
        k: winners per row, 1 <= k <= N.
        subtract_next: subtract I_b (only with V None).
        open_at_zero: the ReLU passes gradient at a pre-activation of exactly 0.
        usage: None, or a contiguous (N,) float32/float64 CPU tensor to which 1 is added, in
            place, at every winner of every row (``RouterLayer.unit_usage``'s count).
        winners: return the winners; False skips writing them (B·k indices) when the caller
            does not read them.

    Returns:
        (y, idx): y (B, d_out) of x's dtype; idx (B, k) int32, each row's winners in
        increasing unit index (equal scores won by the lowest index), or None without
        ``winners``.

    Raises:
        ValueError: as ``kwta_scores`` (shapes, dtypes, k, non-finite routing scores; a
            non-finite x is named), if bias, U or out_bias do not fit N and x's dtype, if
            usage is not as above, or if ``subtract_next`` comes with a routing matrix V.
    """
    if subtract_next and V is not None:
        raise ValueError("subtract_next needs V None (the MLP routed by its own scores)")
    xa, n = _routing_operands(x, W if V is None else V, k, *(() if V is None else (W,)))
    ok = isinstance(U, torch.Tensor) and U.ndim == 2 and U.shape[1] == n
    d_out = U.shape[0] if ok else -1
    for t, size in ((bias, n), (out_bias, d_out)):  # a loop: as in _routing_operands
        ok = ok and (t is None or isinstance(t, torch.Tensor) and t.ndim == 1
                     and t.shape[0] == size and t.dtype == x.dtype and t.device.type == "cpu")
    if not (ok and U.dtype == x.dtype and U.device.type == "cpu"):
        raise ValueError(f"bias must be ({n},), U (d_out, {n}) and out_bias (d_out,), CPU "
                         f"tensors of x's dtype {x.dtype}")
    if usage is not None and not (isinstance(usage, torch.Tensor) and usage.ndim == 1
                                  and usage.shape[0] == n and usage.device.type == "cpu"
                                  and usage.dtype in (torch.float32, torch.float64)
                                  and usage.is_contiguous()):
        raise ValueError(f"usage must be a contiguous ({n},) float32 or float64 CPU tensor")
    B, d = xa.shape
    ua = U.detach().contiguous().numpy()
    none = ua[0, :0]  # an empty vector: no bias, no output bias, no (k+1)-th scores
    idx = np.empty(B * k + LANES if winners else 0, np.int32)  # padded, as kwta_scores'
    active = _active(B, k, xa.dtype)
    y = np.empty((B, d_out), xa.dtype)
    nxt = np.empty(B, xa.dtype) if subtract_next else none
    xp = np.empty((B, -(-d // LANES) * LANES), xa.dtype)  # x padded, for the backward
    ba = none if bias is None else bias.detach().numpy()
    ca = none if out_bias is None else out_bias.detach().numpy()
    # counted apart and added on success: a failed call leaves usage as it was
    counts = np.zeros(n if usage is not None else 0, np.float64)
    # V None: the routing scores are the MLP's own (no second matrix)
    if B and not _kwta_block_rows(xa, (W if V is None else V).detach().numpy(), n, k,
                                  bracket_quantiles(n, k), idx, none, nxt, subtract_next,
                                  xa[:0] if V is None else W.detach().numpy(), ba, ua[0], ca,
                                  active, open_at_zero, y, xp, subtract_next, counts):
        check_finite_tensor(x, "x")  # a NaN or infinite x makes its row's scores so
        raise ValueError("the routing scores must be finite; the routing matrix has NaN or "
                         "infinite entries, or they overflow")
    if usage is not None:
        usage_array = usage.detach().numpy()
        usage_array += counts
    if d_out > 1:
        _later_outputs(active, ua, ca, y)
    kept = xp, active, ua  # what the backward reads
    return (_RoutedUnitMLP.apply(x, W, bias, U, out_bias, y, kept),
            torch.from_numpy(idx[:B * k].reshape(B, k)) if winners else None)


class _RoutedUnitMLP(torch.autograd.Function):
    """``routed_unit_mlp``'s autograd node: y and the arrays its backward reads come from
    the kernel as they are. A leaner node than ``_UnitMLP``'s, with fewer arguments (each
    costs the node's creation time) and no work in the forward. (In COMET's training step at
    width 256, k = 64, with the kernels made no-ops, the Python around them took 0.2 ms more
    than around a bare custom node, before this node and the checks were trimmed; 0.13-0.15
    ms after.)"""

    @staticmethod
    def forward(ctx, x, W, bias, U, out_bias, y, kept):
        ctx.save_for_backward(U, W)  # for autograd's check that neither changed
        ctx.kept = kept
        return torch.from_numpy(y)

    @staticmethod
    def backward(ctx, dy):
        _, W = ctx.saved_tensors
        xp, active, ua = ctx.kept
        needs = ctx.needs_input_grad
        dx, dW, dbias, dU, dout = _gradients(xp, W, active, ua, dy, needs[0], needs[2])
        return dx, dW, dbias, dU, dout if needs[4] else None, None, None


# The winners whose ReLU passes gradient, row after row: units (int32) and pre (their
# pre-activations, > 0, or >= 0 with ``open_at_zero``) hold row b's at [ends[b - 1], ends[b])
# (from 0 for b = 0), with LANES entries of room at the end (whole vectors are stored).
# The backward reads these only: a blocked winner adds nothing to any gradient, and it is
# about half of them in a ReLU layer.
_Active = namedtuple("_Active", "units pre ends")


def _active(B: int, k: int, dtype) -> _Active:
    """Room for the active winners of B rows of k winners each."""
    return _Active(np.empty(B * k + LANES, np.int32), np.empty(B * k + LANES, dtype),
                   np.empty(B, np.int64))


@njit(cache=True, fastmath=_REASSOC)
def _forward(x, idx, W, bias, offset, U, given, at_zero, active, y):
    """y[b, 0] = Σ_s U[0, j] max(p_bs, 0), p_bs = W_j·x_b + bias_j + offset_b, j = idx[b, s],
    and the winners whose ReLU passes gradient into ``active`` (``_Active``); x and W padded
    with zero columns to a multiple of LANES. W_j·x_b is read from given[b, s] when
    ``given`` is not empty."""
    B, k = idx.shape
    use_given = given.shape[0] > 0
    u0 = U[0]
    zero = y.dtype.type(0)
    pre, row_j = np.empty(k + LANES, y.dtype), np.empty(k + LANES, np.int32)
    lowest = _lowest_passing(at_zero, y)
    pos = 0
    for b in range(B):
        ib, ob = idx[b], offset[b]
        acc = zero  # output 0 in the same pass (a separate loop was vectorised into gathers)
        for s in range(k):
            j = np.uintp(ib[s])  # unsigned: no negative-index wraparound code
            score = given[b, s] if use_given else row_dot(W, j, x, b)
            p = score + bias[j] + ob
            pre[s] = p
            row_j[s] = ib[s]
            acc += u0[j] * max(p, zero)
        y[b, 0] = acc
        pos += compress_in_range(pre, k, lowest, None, row_j, active.pre[pos:pos + k + LANES],
                                 active.units[pos:pos + k + LANES])
        active.ends[b] = pos


@njit(cache=True, fastmath=_REASSOC)
def _backward(x, active, W, U, dy, extra, want_dx, dx, dW, dbias, dU, dout, dW_out):
    """Gradients of the unit MLP's y into dx, dW (padded like x and W), dbias (unless it is
    empty: no bias), dU and dout (the output bias's: Σ_b dy[b]) from its active winners (``_Active``: the others' ReLU
    passes no gradient); dW also into dW_out (N, d_in) without the padding, unless dW is
    dW_out (a tensor of a padded array's view would be copied by autograd's accumulation,
    in an operation of its own).

    dh = Σ_o dy[b, o] U[o, j]: output 0 here, the others in ``extra`` (B, N) = dy[:, 1:] U[1:]
    (empty when d_out = 1). The main loop is written for d_out = 1 without dx: a loop over
    the outputs or the dx update inside it made it 2-2.5x slower, so those run as separate
    passes."""
    B = x.shape[0]
    zero = x.dtype.type(0)
    units, pre, ends = active
    dW[:] = 0
    dbias[:] = 0
    dU[:] = 0
    dout[:] = 0
    du0, u0 = dU[0], U[0]
    start = 0
    for b in range(B):
        for o in range(dy.shape[1]):
            dout[o] += dy[b, o]
        dy0 = dy[b, 0]
        for q in range(start, ends[b]):
            j = np.uintp(units[q])  # unsigned: no negative-index wraparound code
            du0[j] += dy0 * max(pre[q], zero)
            dh = dy0 * u0[j]
            if extra.shape[0] > 0:
                dh += extra[b, j]
            if dbias.shape[0] > 0:  # the same way for every winner: no misprediction
                dbias[j] += dh
            row_axpy(dW, j, x, b, dh)
        start = ends[b]
    for o in range(1, U.shape[0]):
        start = 0
        for b in range(B):
            for q in range(start, ends[b]):
                dU[o, np.uintp(units[q])] += dy[b, o] * max(pre[q], zero)
            start = ends[b]
    if want_dx:
        dx[:] = 0
        start = 0
        for b in range(B):
            dy0 = dy[b, 0]
            for q in range(start, ends[b]):
                j = np.uintp(units[q])
                dh = dy0 * u0[j]  # as in the main loop
                if extra.shape[0] > 0:
                    dh += extra[b, j]
                row_axpy(dx, b, W, j, dh)
            start = ends[b]
    if dW_out.shape[1] != dW.shape[1]:
        dW_out[:] = dW[:, :dW_out.shape[1]]


def _padded(t: torch.Tensor) -> np.ndarray:
    """t (R, d) as a C-contiguous array with zero columns up to a multiple of LANES."""
    src = t.detach().numpy()
    out = np.zeros((src.shape[0], -(-src.shape[1] // LANES) * LANES), src.dtype)
    out[:, :src.shape[1]] = src
    return out


def _gradients(xp, W, active, ua, dy, want_dx, want_dbias, wp=None):
    """(dx or None, dW, dbias or None, dU, dout) of the unit MLP's y, as tensors, from the
    arrays its forward kept (the padded x, the active winners, U) and dy (B, d_out); W
    (N, d_in) is padded for dx unless given padded as wp."""
    dya = dy.detach().contiguous().numpy()
    n_units, d_out = ua.shape[1], ua.shape[0]
    d = W.shape[1]
    dx = np.empty_like(xp) if want_dx else xp[:0]
    if wp is None:  # read by the dx pass only
        wp = _padded(W) if want_dx else xp[:0]
    dW = np.empty((n_units, xp.shape[1]), xp.dtype)
    dW_out = dW if d == xp.shape[1] else np.empty((n_units, d), xp.dtype)
    dbias = np.empty(n_units if want_dbias else 0, xp.dtype)
    dU = np.empty((d_out, n_units), xp.dtype)
    dout = np.empty(d_out, xp.dtype)
    extra = dya[:, 1:] @ ua[1:] if d_out > 1 else dW[:0]
    _backward(xp, active, wp, ua, dya, extra, want_dx, dx, dW, dbias, dU, dout, dW_out)
    return (torch.from_numpy(dx[:, :d]) if want_dx else None, torch.from_numpy(dW_out),
            torch.from_numpy(dbias) if want_dbias else None, torch.from_numpy(dU),
            torch.from_numpy(dout))


class _UnitMLP(torch.autograd.Function):
    """``unit_mlp``'s autograd: the padded x and the active winners are kept for the
    backward, and the padded W when the forward padded it (the backward pads it only for
    dx: with the scores given and no gradient for x, W is never padded)."""

    @staticmethod
    def forward(ctx, x, idx, W, bias, offset, U, given, open_at_zero, out_bias):
        xp = _padded(x)
        wp = _padded(W) if given.shape[0] == 0 else None  # the forward reads W then only
        ia, ba, oa, ua, ga = _arrays(idx, bias, offset, U, given)
        B, k = ia.shape
        active = _active(B, k, xp.dtype)
        y = np.empty((B, ua.shape[0]), xp.dtype)
        _forward(xp, ia, xp[:0] if wp is None else wp, ba, oa, ua, ga, bool(open_at_zero),
                 active, y)
        if ua.shape[0] > 1:
            _later_outputs(active, ua, ua[0, :0], y)
        if out_bias is not None:  # here, not as a separate autograd node
            y += out_bias.detach().numpy()
        # the arrays the backward reads, kept as they are (each conversion there cost
        # microseconds); the tensors saved for autograd's version check on use
        ctx.save_for_backward(idx, U, W)
        ctx.arrays = xp, wp, active, ua
        return torch.from_numpy(y)

    @staticmethod
    def backward(ctx, dy):
        _, _, W = ctx.saved_tensors  # checks that none changed since the forward
        xp, wp, active, ua = ctx.arrays
        needs = ctx.needs_input_grad
        dx, dW, dbias, dU, dout = _gradients(xp, W, active, ua, dy, needs[0], needs[3], wp)
        return dx, None, dW, dbias, None, dU, None, None, dout if needs[8] else None


def unit_mlp(x: torch.Tensor, idx: torch.Tensor, W: torch.Tensor, bias: torch.Tensor | None,
             U: torch.Tensor, offset: torch.Tensor | None = None,
             scores: torch.Tensor | None = None, open_at_zero: bool = False,
             out_bias: torch.Tensor | None = None) -> torch.Tensor:
    """A one-hidden-layer ReLU MLP evaluated at each example's winners only, on the CPU:

        y_b = Σ_s U[:, j] · ReLU(W_j · x_b + bias_j + offset_b) (+ out_bias),   j = idx[b, s],

    differentiable in x, W, bias, U and out_bias (once; no double backward); ``offset`` is a
    constant.
    It equals ``(mask ∘ ReLU(x Wᵀ + bias + offset)) Uᵀ`` with mask the 0/1 matrix of the
    winners (COMET §4, Eqs. 7–8 with one hidden layer; SDMLP's a* = [a − I]_+ of Bricken et al.
    2023, Eq. 4, with offset = −I), up to the order of the floating-point sums.

    Arguments:
        x: (B, d_in) float32 or float64 CPU tensor.
        idx: (B, k) int32 or int64, each row's winners, distinct and in [0, N) (not checked:
            the callers pass ``kwta_scores``'s output).
        W: (N, d_in); bias: (N,) or None (zero); U: (d_out, N); offset: (B,) or None (zero);
            all of x's dtype.
        scores: (B, k) or None: W_j · x_b at the winners when the caller has them already
            (``kwta_scores`` returns them; SDMLP's winners are scored by W itself); they are
            used as they are, and gradients still follow the formula above.
        open_at_zero: the ReLU passes gradient at a pre-activation of exactly 0 (torch's
            ``clamp(min=0)``, SDMLP's form) instead of blocking it (``torch.relu``).
        out_bias: (d_out,) of x's dtype or None: the output layer's bias, added inside this
            autograd node (dL/d out_bias = Σ_b dL/dy_b) rather than as a node of its own.

    Returns:
        (B, d_out) tensor of x's dtype.
    """
    bias = torch.zeros(W.shape[0], dtype=W.dtype) if bias is None else bias
    offset = torch.zeros(x.shape[0], dtype=x.dtype) if offset is None else offset
    given = (torch.empty((0, idx.shape[1]), dtype=x.dtype) if scores is None
             else scores.detach())
    return _UnitMLP.apply(x, idx, W, bias, offset, U, given, open_at_zero, out_bias)


@njit(cache=True)
def _normalised_rows(x, split, lift, out):
    """out[b] = x̂_b / ‖x̂_b‖ (0 for a zero row), x̂_b = ([x_b]_+, [−x_b]_+) if split else x_b,
    followed by a 1 if lift. A row whose sum of squares overflows (entries near the largest
    float's square root, 1.8e19 in float32) or underflows to where the squares lose their
    digits is divided by its largest magnitude first: x̂ / ‖x̂‖ does not change, and the
    norm no longer comes out inf (a row of zeros) or 0 (a row blown up by 1 / tiny)."""
    B, d = x.shape
    tiny = np.finfo(x.dtype).tiny
    small = tiny / np.finfo(x.dtype).eps  # below it a sum of squares has lost digits
    inf = x.dtype.type(np.inf)
    zero = x.dtype.type(0)
    for b in range(B):
        for j in range(d):
            out[b, j] = max(x[b, j], zero) if split else x[b, j]
        width = d
        if split:
            for j in range(d):
                out[b, d + j] = max(-x[b, j], zero)
            width = 2 * d
        if lift:
            out[b, width] = 1
            width += 1
        total = x.dtype.type(0)
        for j in range(width):
            total += out[b, j] * out[b, j]
        if not (small <= total < inf):
            largest = zero
            for j in range(width):
                largest = max(largest, abs(out[b, j]))
            if largest > zero:
                total = zero
                for j in range(width):
                    out[b, j] /= largest
                    total += out[b, j] * out[b, j]
        norm = max(np.sqrt(total), tiny)
        for j in range(width):
            out[b, j] /= norm


def normalised_rows(x: torch.Tensor, split_signs: bool, lift: bool) -> torch.Tensor:
    """SDMLP's input normalisation (Bricken et al. 2023 §4, App. A.5) in one pass over a CPU
    batch, without autograd: x (B, d) -> x̂ / ‖x̂‖ (a zero row stays zero), x̂ = ([x]_+, [−x]_+)
    with ``split_signs``, then (x̂, 1) with ``lift``; the norm floored at the dtype's tiny, as
    ``SDMLP.normalise_inputs``'s torch operations (equal up to the order of the sum of
    squares). Rows whose sum of squares would overflow or underflow are scaled by their
    largest magnitude first, so every nonzero finite row comes out of unit norm.

    Arguments:
        x: (B, d) float32 or float64 CPU tensor.

    Returns:
        (B, d · (2 if split_signs else 1) + (1 if lift else 0)) tensor of x's dtype.
    """
    xa = x.detach().contiguous().numpy()
    width = xa.shape[1] * (2 if split_signs else 1) + (1 if lift else 0)
    out = torch.empty((xa.shape[0], width), dtype=x.dtype)
    _normalised_rows(xa, bool(split_signs), bool(lift), out.numpy())
    return out


@njit(cache=True)
def _project_rows(W, D, nonneg_decoder):
    """W's rows clamped at >= 0 and rescaled to unit norm (floored at tiny: a zero row stays
    zero); D clamped at >= 0 if nonneg_decoder."""
    zero, tiny = W.dtype.type(0), np.finfo(W.dtype).tiny
    for i in range(W.shape[0]):
        total = zero
        for j in range(W.shape[1]):
            W[i, j] = max(W[i, j], zero)
            total += W[i, j] * W[i, j]
        norm = max(np.sqrt(total), tiny)
        for j in range(W.shape[1]):
            W[i, j] /= norm
    if nonneg_decoder:
        for i in range(D.shape[0]):
            for j in range(D.shape[1]):
                D[i, j] = max(D[i, j], zero)


def project_nonnegative_unit_rows(W: torch.Tensor, D: torch.Tensor, nonneg_decoder: bool
                                  ) -> None:
    """SDMLP's projection after each optimiser step (Bricken et al. 2023, Algorithm 1), in
    place and in one pass: W's rows clamped at >= 0 and rescaled to unit L2 norm (a row
    clamped to all zeros stays zero), D clamped at >= 0 when ``nonneg_decoder``. Both
    tensors' version counters are incremented, as torch's in-place operations do (autograd
    then refuses a backward through values saved before the projection).

    Arguments:
        W: (N, d) float32 or float64 contiguous CPU tensor; D: (d_out, N) of W's dtype.
    """
    _project_rows(W.detach().numpy(), D.detach().numpy(), bool(nonneg_decoder))
    torch.autograd.graph.increment_version(W)
    if nonneg_decoder:
        torch.autograd.graph.increment_version(D)
