"""The hidden-unit routers' CPU kernels (``routing.layers._unit_kernel``) and the vector
primitives under them: k-winner-take-all against the ``routing.topk`` rule, the winners-only
MLP against the dense masked formula, and COMET / SDMLP's kernel path against their torch
path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from routing._projection import FEW, kth_largest_of_few, max_below, min_max, row_axpy, row_dot
from routing._select import (bracket_quantiles, kth_largest_bracketed, kth_largest_guessed,
                             mean_std)
from routing.layers import COMET, SDMLP, COMETConfig, SDMLPConfig
from routing.layers._unit_kernel import (kwta_scores, normalised_rows, routed_unit_mlp,
                                         project_nonnegative_unit_rows, unit_mlp)
from routing.topk import topk_mask


# -- vector primitives -----------------------------------------------------------------------
@njit
def _min_max(v, n):
    return min_max(v, n)


@njit
def _max_below(v, n, hi):
    return max_below(v, n, hi)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 40])
def test_max_below_skips_nan_and_reads_only_n(dtype, n):
    rng = np.random.default_rng(n)
    v = np.full(n + 16, -1.0, dtype)  # past n: below every bound, must be ignored
    v[:n] = np.round(rng.standard_normal(n) * 4) / 4  # ties at the bound too
    if n > 2:
        v[1] = np.nan
    kept = v[:n][~np.isnan(v[:n])]
    for hi in [*kept, -np.inf, np.inf]:
        below = kept[kept < hi]
        assert _max_below(v, n, hi) == (below.max() if below.size else -np.inf)


@njit
def _axpy_dot(dst, j, src, i, scale):
    row_axpy(dst, j, src, i, scale)
    return row_dot(dst, j, src, i)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 15, 16, 17, 40])
def test_min_max_skips_nan_and_reads_only_n(dtype, n):
    rng = np.random.default_rng(n)
    v = np.full(n + 16, 1e30, dtype)  # past n: larger than everything, must be ignored
    v[:n] = rng.standard_normal(n)
    if n > 2:
        v[1] = np.nan
    kept = v[:n][~np.isnan(v[:n])]
    assert _min_max(v, n) == (kept.min(), kept.max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("width", [16, 48])
def test_row_axpy_and_row_dot_match_numpy(dtype, width):
    rng = np.random.default_rng(width)
    dst = rng.standard_normal((5, width)).astype(dtype)
    src = rng.standard_normal((3, width)).astype(dtype)
    expect = dst.copy()
    expect[4] += dtype(0.5) * src[2]
    dot = _axpy_dot(dst, 4, src, 2, 0.5)
    np.testing.assert_allclose(dst, expect, rtol=1e-6)
    np.testing.assert_allclose(dot, np.dot(expect[4].astype(np.float64), src[2]), rtol=1e-5)
    assert np.array_equal(dst[:4], expect[:4])  # other rows untouched


@njit
def _kth_of_few(v, n, m):
    return kth_largest_of_few(v, n, m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("spread", [3, 1000])  # many ties, few ties
def test_kth_largest_of_few_against_a_sort(dtype, spread):
    rng = np.random.default_rng(spread)
    for _ in range(2000):
        n = int(rng.integers(1, FEW + 1))
        m = int(rng.integers(1, n + 1))
        v = np.full(FEW + 3, 1e30, dtype)  # past n: larger than everything, must be ignored
        v[:n] = np.round(rng.standard_normal(n) * spread) / 2
        assert _kth_of_few(v, n, m) == np.sort(v[:n])[::-1][m - 1]


@njit
def _mean_std(v, n):
    return mean_std(v, n)


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-4), (np.float64, 1e-10)])
@pytest.mark.parametrize("center", [0.0, 30.0, -1e3])
def test_mean_std_against_numpy(dtype, rtol, center):
    """The one-pass moments (shifted by v[0]) match numpy's, also far from zero; a NaN or
    infinite entry anywhere makes them non-finite (the kernels' finiteness check)."""
    rng = np.random.default_rng(int(abs(center)))
    for n in (1, 7, 16, 33, 256):
        v = (center + rng.standard_normal(n + 16)).astype(dtype)
        mean, std = _mean_std(v, n)
        np.testing.assert_allclose(mean, v[:n].astype(np.float64).mean(), rtol=rtol, atol=rtol)
        np.testing.assert_allclose(std, v[:n].astype(np.float64).std(), rtol=100 * rtol,
                                   atol=100 * rtol)
        for bad in (np.nan, np.inf, -np.inf):
            w = v.copy()
            w[n - 1] = bad
            assert not all(np.isfinite(_mean_std(w, n)))


@njit
def _kth(v, n, k):
    small = np.empty(max(n, FEW) + 16, v.dtype)
    lo, top = min_max(v, n)
    return kth_largest_bracketed(v, n, k, lo, v.dtype.type(np.inf), top, small)


def test_kth_largest_bracketed_float32_with_many_ties():
    """More than FEW values tied at the k-th largest keep the bisection going until no float is
    left between its bounds. (Its midpoint was once float64 between float32 values: the
    counting passes rounded it, a scalar compaction did not, and the answer was garbage.)"""
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = np.zeros(256 + 16, np.float32)
        v[:256] = np.round(rng.standard_normal(256) * 2) / 2  # many exact ties
        k = int(rng.integers(1, 257))
        assert _kth(v, 256, k) == np.sort(v[:256])[::-1][k - 1]


@njit
def _kth_guessed(v, n, k, mean, std, quantiles):
    inner, small = np.empty(max(n, FEW) + 16, v.dtype), np.empty(max(n, FEW) + 16, v.dtype)
    return kth_largest_guessed(v, n, k, mean, std, quantiles, inner, small)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 300), data=st.data(), levels=st.sampled_from([3, 1000]),
       seed=st.integers(0, 10_000), double=st.booleans(),
       guess=st.sampled_from(["row", "off", "nan", "inf", "zero"]))
def test_kth_largest_guessed_whatever_the_guess(n, data, levels, seed, double, guess):
    """Right guesses, guesses far off, NaN and infinite moments and a zero spread all give
    the k-th largest (ties common with few levels)."""
    k = data.draw(st.integers(1, n), label="k")
    rng = np.random.default_rng(seed)
    dtype = np.float64 if double else np.float32
    v = np.zeros(n + 16, dtype)
    v[:n] = rng.integers(0, levels, n) / 7 - 50
    mean, std = {"row": (v[:n].mean(), v[:n].std()), "off": (1e3, 0.1), "nan": (np.nan, 1.0),
                 "inf": (0.0, np.inf), "zero": (v[:n].mean(), 0.0)}[guess]
    got = _kth_guessed(v, n, k, float(mean), float(std), bracket_quantiles(n, k))
    assert got == np.sort(v[:n])[::-1][k - 1]


@pytest.mark.parametrize("n,k", [(256, 64), (1024, 256), (300, 7)])
def test_kth_largest_guessed_on_gaussian_rows(n, k):
    """The usual case, where the inner bracket holds the k-th largest (Gaussian rows, their
    own moments): the answer comes from the few values inside it."""
    rng = np.random.default_rng(n + k)
    for _ in range(40):
        v = np.zeros(n + 16, np.float32)
        v[:n] = rng.standard_normal(n) * 3 + 1
        got = _kth_guessed(v, n, k, float(v[:n].mean()), float(v[:n].std()),
                           bracket_quantiles(n, k))
        assert got == np.sort(v[:n])[::-1][k - 1]


# -- k-winner-take-all -----------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(B=st.integers(0, 20), n=st.integers(1, 70), d=st.integers(1, 5),
       data=st.data(), double=st.booleans())
def test_kwta_scores_follow_the_topk_rule(B, n, d, data, double):
    """Small integers: every score is exact in any summation order, so ties are real and the
    winners must be ``routing.topk``'s (largest first, ties by lowest index)."""
    k = data.draw(st.integers(1, n))
    seed = data.draw(st.integers(0, 2**31))
    gen = torch.Generator().manual_seed(seed)
    dtype = torch.float64 if double else torch.float32
    x = torch.randint(-2, 3, (B, d), generator=gen).to(dtype)
    W = torch.randint(-2, 3, (n, d), generator=gen).to(dtype)
    idx, vals, nxt = kwta_scores(x, W, k, with_next=True)
    scores = (x.double() @ W.double().T).numpy()
    assert idx.dtype == torch.int32 and idx.shape == (B, k)
    if B == 0:
        return
    mask = topk_mask(scores, k)
    assert np.array_equal(idx.numpy(), np.nonzero(mask)[1].reshape(B, k))
    assert np.array_equal(vals.double().numpy(), np.take_along_axis(scores, idx.long().numpy(), 1))
    ordered = -np.sort(-scores, axis=1)
    expect = ordered[:, k] if k < n else np.full(B, -np.inf)
    assert np.array_equal(nxt.double().numpy(), expect)


@pytest.mark.parametrize("n,k", [(256, 64), (1024, 256), (100, 1), (33, 33)])
def test_kwta_scores_on_gaussian_scores(n, k):
    """Real-valued scores (the guessed bracket's usual case): the winners are the k largest of
    the kernel's own scores, which equal x Wᵀ to rounding."""
    gen = torch.Generator().manual_seed(n + k)
    x, W = torch.randn(300, 8, generator=gen), torch.randn(n, 8, generator=gen)
    idx, vals, nxt = kwta_scores(x, W, k, with_next=True)
    torch.testing.assert_close(vals, torch.gather(x @ W.T, 1, idx.long()), rtol=1e-5, atol=1e-5)
    scores = (x.double() @ W.double().T)
    chosen = torch.zeros_like(scores, dtype=torch.bool).scatter_(1, idx.long(), True)
    worst_in = scores.masked_fill(~chosen, np.inf).amin(1)
    best_out = scores.masked_fill(chosen, -np.inf).amax(1)
    assert bool((worst_in >= best_out - 1e-5).all())
    assert bool((idx[:, 1:] > idx[:, :-1]).all())  # increasing unit index
    if k < n:
        torch.testing.assert_close(nxt.double(), best_out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n,k,d,d_out", [(256, 64, 8, 1), (20, 7, 3, 3), (33, 33, 17, 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_biases", [True, False])
def test_routed_unit_mlp_is_kwta_then_unit_mlp(n, k, d, d_out, dtype, with_biases):
    """The fused kernel picks kwta_scores's winners and gives the dense masked formula's y
    (COMET §4, Eqs. 4-8) and unit_mlp's gradients."""
    gen = torch.Generator().manual_seed(n + d_out)
    x, V, W = (torch.randn(s, d, generator=gen, dtype=dtype) for s in (50, n, n))
    x.requires_grad_()  # through W x only: the winners are constants
    W.requires_grad_()
    U = torch.randn(d_out, n, generator=gen, dtype=dtype, requires_grad=True)
    bias, c = ((torch.randn(n, generator=gen, dtype=dtype, requires_grad=True),
                torch.randn(d_out, generator=gen, dtype=dtype, requires_grad=True))
               if with_biases else (None, None))
    y, idx = routed_unit_mlp(x, V, k, W, bias, U, c)
    ref_idx, _, _ = kwta_scores(x, V, k)
    assert idx.dtype == torch.int32 and torch.equal(idx, ref_idx)
    want = _dense_masked(x, idx, W, bias, U, None, False) + (0 if c is None else c)
    tol = {} if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y, want, **tol)
    params = [t for t in (x, W, U, bias, c) if t is not None]
    dy = torch.randn(y.shape, generator=gen, dtype=dtype)
    got = torch.autograd.grad(y, params, dy)
    for g, w in zip(got, torch.autograd.grad(unit_mlp(x, idx, W, bias, U, out_bias=c), params,
                                             dy)):
        torch.testing.assert_close(g, w, **tol)


@pytest.mark.parametrize("n,k,d,d_out", [(256, 64, 17, 1), (40, 9, 5, 3), (12, 11, 3, 1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_routed_unit_mlp_by_its_own_scores_is_sdmlps_topk(n, k, d, d_out, dtype):
    """V None with subtract_next: the winners of W x, I = max((k+1)-th score, 0) subtracted
    (Bricken et al. 2023, Eq. 4), as kwta_scores then unit_mlp compute it, gradients
    included (the clamp's at 0)."""
    gen = torch.Generator().manual_seed(n + d)
    x = torch.randn(60, d, generator=gen, dtype=dtype, requires_grad=True)
    W = torch.randn(n, d, generator=gen, dtype=dtype).abs().requires_grad_()  # I > 0 mostly
    U = torch.randn(d_out, n, generator=gen, dtype=dtype, requires_grad=True)
    y, idx = routed_unit_mlp(x, None, k, W, None, U, subtract_next=True, open_at_zero=True)
    ref_idx, a, nxt = kwta_scores(x, W, k, with_next=True)
    assert torch.equal(idx, ref_idx)
    ref = unit_mlp(x, idx, W, None, U, offset=-nxt.clamp(min=0), scores=a, open_at_zero=True)
    tol = {} if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y, ref, **tol)
    assert bool((y != unit_mlp(x, idx, W, None, U, scores=a)).any())  # I was subtracted
    dy = torch.randn(y.shape, generator=gen, dtype=dtype)
    for g, w in zip(torch.autograd.grad(y, (x, W, U), dy),
                    torch.autograd.grad(ref, (x, W, U), dy)):
        torch.testing.assert_close(g, w, **tol)


@pytest.mark.parametrize("open_at_zero", [False, True])
@pytest.mark.parametrize("d_out", [1, 3])
def test_routed_unit_mlp_gradients_equal_the_dense_formulas(open_at_zero, d_out):
    """Against torch's autograd of the dense masked formula itself (not unit_mlp, which
    shares the backward kernel): small integers make many pre-activations exactly 0, where
    only clamp(min=0) passes gradient, and make every score exact in any summation order."""
    gen = torch.Generator().manual_seed(11 + d_out)
    n, k, d = 30, 9, 4
    x = torch.randint(-2, 3, (64, d), generator=gen).double().requires_grad_()
    V, W = (torch.randint(-3, 4, (n, d), generator=gen).double() for _ in range(2))
    W.requires_grad_()
    bias = torch.randint(-2, 3, (n,), generator=gen).double().requires_grad_()
    U = torch.randn(d_out, n, generator=gen, dtype=torch.float64, requires_grad=True)
    c = torch.randn(d_out, generator=gen, dtype=torch.float64, requires_grad=True)
    y, idx = routed_unit_mlp(x, V, k, W, bias, U, c, open_at_zero=open_at_zero)
    ref = _dense_masked(x, idx, W, bias, U, None, open_at_zero) + c
    pre = (x @ W.T + bias).gather(1, idx.long())
    assert bool((pre == 0).any()) and bool((pre < 0).any())  # both kinds of blocked unit
    ordered = (x @ V.T).sort(1, descending=True).values
    tied = ordered[:, k - 1] == ordered[:, k]  # rows the kernel lists, the others it masks
    assert bool(tied.any()) and bool((~tied).any())
    torch.testing.assert_close(y, ref, rtol=1e-12, atol=1e-12)
    dy = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    params = (x, W, bias, U, c)
    for got, want in zip(torch.autograd.grad(y, params, dy), torch.autograd.grad(ref, params, dy)):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("subtract_next", [False, True])
def test_routed_unit_mlp_counts_usage_and_can_leave_out_the_winners(subtract_next):
    """usage[j] gains 1 for every example that j wins (the count ``record_usage`` makes of
    the winners), and ``winners=False`` changes nothing but the second output."""
    gen = torch.Generator().manual_seed(2)
    x, V, W = (torch.randn(s, 5, generator=gen) for s in (40, 24, 24))
    U = torch.randn(2, 24, generator=gen)
    route = None if subtract_next else V
    y, idx = routed_unit_mlp(x, route, 6, W, None, U, subtract_next=subtract_next)
    usage = torch.full((24,), 3.0, dtype=torch.float64)
    y2, none = routed_unit_mlp(x, route, 6, W, None, U, subtract_next=subtract_next,
                               usage=usage, winners=False)
    assert none is None and torch.equal(y2, y)
    expect = 3 + torch.bincount(idx.long().reshape(-1), minlength=24).double()
    assert torch.equal(usage, expect)
    x[30, 2] = np.nan  # a failed call counts nothing
    with pytest.raises(ValueError, match="x must be finite"):
        routed_unit_mlp(x, route, 6, W, None, U, subtract_next=subtract_next, usage=usage)
    assert torch.equal(usage, expect)
    for bad in (torch.zeros(23, dtype=torch.float64), torch.zeros(24, dtype=torch.int64),
                torch.zeros(24, 2, dtype=torch.float64)[:, 0]):
        with pytest.raises(ValueError, match=r"usage must be a contiguous \(24,\)"):
            routed_unit_mlp(x, V, 6, W, None, U, usage=bad)


def test_routed_unit_mlp_rejects_bad_operands():
    x, V, W, U = torch.randn(5, 4), torch.randn(9, 4), torch.randn(9, 4), torch.randn(1, 9)
    with pytest.raises(ValueError, match="unit matrices"):
        routed_unit_mlp(x, V, 3, W[:-1], None, U)
    with pytest.raises(ValueError, match=r"U \(d_out, 9\)"):
        routed_unit_mlp(x, V, 3, W, None, U[:, :-1])
    with pytest.raises(ValueError, match="out_bias"):
        routed_unit_mlp(x, V, 3, W, None, U, torch.zeros(2))
    with pytest.raises(ValueError, match="k must be in"):
        routed_unit_mlp(x, V, 10, W, None, U)
    with pytest.raises(ValueError, match="subtract_next needs V None"):
        routed_unit_mlp(x, V, 3, W, None, U, subtract_next=True)
    x[2, 1] = np.nan
    with pytest.raises(ValueError, match="finite"):
        routed_unit_mlp(x, V, 3, W, None, U)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_kwta_scores_rejects_nonfinite_scores(bad):
    x = torch.randn(9, 4)
    x[5, 2] = bad
    with pytest.raises(ValueError, match="finite"):
        kwta_scores(x, torch.randn(20, 4), 3)


@pytest.mark.parametrize("k", [0, 21])
def test_kwta_scores_rejects_k_out_of_range(k):
    with pytest.raises(ValueError, match=r"k must be in \[1, 20\]"):
        kwta_scores(torch.randn(3, 4), torch.randn(20, 4), k)


def test_kwta_scores_rejects_mixed_dtypes():
    with pytest.raises(ValueError, match="one dtype"):
        kwta_scores(torch.randn(3, 4), torch.randn(20, 4, dtype=torch.float64), 2)


# -- the winners-only MLP --------------------------------------------------------------------
def _dense_masked(x, idx, W, bias, U, offset, open_at_zero):
    mask = torch.zeros(x.shape[0], W.shape[0], dtype=x.dtype).scatter_(1, idx.long(), 1.0)
    pre = x @ W.T + (0 if bias is None else bias) + (0 if offset is None else offset[:, None])
    h = pre.clamp(min=0) if open_at_zero else torch.relu(pre)
    return (h * mask) @ U.T


@pytest.mark.parametrize("d_in", [3, 8, 17])
@pytest.mark.parametrize("d_out", [1, 3])
@pytest.mark.parametrize("with_bias,with_offset", [(True, False), (False, True)])
def test_unit_mlp_matches_the_dense_masked_formula(d_in, d_out, with_bias, with_offset):
    gen = torch.Generator().manual_seed(d_in * 10 + d_out)
    B, n, k = 37, 50, 12
    x = torch.randn(B, d_in, generator=gen, dtype=torch.float64, requires_grad=True)
    W = torch.randn(n, d_in, generator=gen, dtype=torch.float64, requires_grad=True)
    bias = (torch.randn(n, generator=gen, dtype=torch.float64, requires_grad=True)
            if with_bias else None)
    U = torch.randn(d_out, n, generator=gen, dtype=torch.float64, requires_grad=True)
    offset = torch.randn(B, generator=gen, dtype=torch.float64) if with_offset else None
    idx = torch.argsort(torch.rand(B, n, generator=gen), 1)[:, :k].sort(1).values.int()
    y = unit_mlp(x, idx, W, bias, U, offset=offset)
    ref = _dense_masked(x, idx, W, bias, U, offset, False)
    torch.testing.assert_close(y, ref, rtol=1e-12, atol=1e-12)
    dy = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    params = [p for p in (x, W, bias, U) if p is not None]
    for got, want in zip(torch.autograd.grad(y, params, dy), torch.autograd.grad(ref, params, dy)):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("open_at_zero", [False, True])
def test_unit_mlp_relu_gradient_at_exactly_zero(open_at_zero):
    """A pre-activation of exactly 0: torch.relu blocks the gradient, clamp(min=0) (SDMLP's
    form) passes it; the kernel follows the flag."""
    x = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    W = torch.tensor([[1.0, -0.5], [1.0, 1.0]], dtype=torch.float64, requires_grad=True)
    U = torch.tensor([[2.0, 3.0]], dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([[0, 1]], dtype=torch.int32)  # unit 0: 1 - 1 = 0 exactly
    y = unit_mlp(x, idx, W, None, U, open_at_zero=open_at_zero)
    ref = _dense_masked(x, idx, W, None, U, None, open_at_zero)
    grads = torch.autograd.grad(y.sum(), (W, U))
    for got, want in zip(grads, torch.autograd.grad(ref.sum(), (W, U))):
        assert torch.equal(got, want)
    assert bool((torch.autograd.grad(unit_mlp(x, idx, W, None, U, open_at_zero=open_at_zero)
                                     .sum(), W)[0][0] != 0).any()) == open_at_zero


def test_unit_mlp_uses_given_scores():
    gen = torch.Generator().manual_seed(3)
    x, W = torch.randn(6, 4, generator=gen), torch.randn(10, 4, generator=gen)
    U = torch.randn(1, 10, generator=gen)
    idx, vals, _ = kwta_scores(x, W, 3)
    torch.testing.assert_close(unit_mlp(x, idx, W, None, U, scores=vals),
                               unit_mlp(x, idx, W, None, U), rtol=1e-5, atol=1e-6)
    shifted = unit_mlp(x, idx, W, None, U, scores=vals + 100)  # the given scores are used
    torch.testing.assert_close(shifted, (U[0, idx.long()] * (vals + 100)).sum(1, keepdim=True))


def test_unit_mlp_with_given_scores_has_the_same_gradients():
    """With the scores given the forward never pads W; the backward pads it for dx only,
    and autograd still refuses a backward after W was changed in place."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(9, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    W = torch.randn(12, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(12, generator=gen, dtype=torch.float64, requires_grad=True)
    U = torch.randn(2, 12, generator=gen, dtype=torch.float64, requires_grad=True)
    idx, vals, _ = kwta_scores(x, W, 4)
    dy = torch.randn(9, 2, generator=gen, dtype=torch.float64)
    grads = [torch.autograd.grad(unit_mlp(x, idx, W, bias, U, scores=scores), (x, W, bias, U),
                                 dy) for scores in (vals, None)]
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want)
    y = unit_mlp(x, idx, W, bias, U, scores=vals)
    with torch.no_grad():
        W.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(dy)


@pytest.mark.parametrize("d_out", [1, 3])
def test_unit_mlp_adds_the_output_bias_inside_with_its_gradient(d_out):
    gen = torch.Generator().manual_seed(4)
    x, W = torch.randn(7, 5, generator=gen, dtype=torch.float64), torch.randn(
        12, 5, generator=gen, dtype=torch.float64)
    U = torch.randn(d_out, 12, generator=gen, dtype=torch.float64).requires_grad_()
    c = torch.randn(d_out, generator=gen, dtype=torch.float64).requires_grad_()
    idx, _, _ = kwta_scores(x, W, 4)
    y = unit_mlp(x, idx, W, None, U, out_bias=c)
    y_ref = unit_mlp(x, idx, W, None, U) + c
    assert torch.equal(y, y_ref)
    dy = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    grads = torch.autograd.grad(y, (U, c), dy)
    for got, want in zip(grads, torch.autograd.grad(y_ref, (U, c), dy)):
        torch.testing.assert_close(got, want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("split,lift", [(False, True), (True, True), (True, False),
                                        (False, False)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_normalised_rows_equal_sdmlps_torch_normalisation(split, lift, dtype):
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(40, 6, generator=gen, dtype=dtype)
    x[3] = 0  # a zero row stays zero (lifted: (0, 1))
    ref = x.clamp(min=0) if split else x
    ref = torch.cat([ref, (-x).clamp(min=0)], 1) if split else ref
    ref = torch.cat([ref, torch.ones_like(ref[:, :1])], 1) if lift else ref
    ref = ref / ref.norm(dim=1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)
    torch.testing.assert_close(normalised_rows(x, split, lift), ref)
    layer = SDMLP(SDMLPConfig(d_in=6, n_neurons=10, k_target=3, split_signs=split,
                              lift_inputs=lift)).to(dtype)
    torch.testing.assert_close(layer.normalise_inputs(x), ref)  # the kernel path
    xg = x.clone().requires_grad_()
    out = layer.normalise_inputs(xg)  # the torch path: x's gradient flows
    torch.testing.assert_close(out, ref)
    assert out.grad_fn is not None


@pytest.mark.parametrize("nonneg_decoder", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sdmlp_projection_kernel_equals_the_torch_operations(nonneg_decoder, dtype):
    gen = torch.Generator().manual_seed(6)
    W, D = torch.randn(30, 9, generator=gen, dtype=dtype), torch.randn(2, 30, generator=gen,
                                                                        dtype=dtype)
    W[4] = -1.0  # clamped to zero: stays a zero row
    ref_W = W.clamp(min=0)
    ref_W = ref_W / ref_W.norm(dim=1, keepdim=True).clamp_min(torch.finfo(dtype).tiny)
    ref_D = D.clamp(min=0) if nonneg_decoder else D.clone()
    versions = W._version, D._version
    project_nonnegative_unit_rows(W, D, nonneg_decoder)
    torch.testing.assert_close(W, ref_W)
    assert torch.equal(D, ref_D) and bool((W[4] == 0).all())
    assert W._version > versions[0] and (D._version > versions[1]) == nonneg_decoder


# -- the layers' kernel path against their torch path ----------------------------------------
def _assert_kernel_path_matches(layer, x, reference):
    """layer(x) (the kernel path) against reference(x) (the layer's masked matmuls): output
    and the gradients of every trainable parameter and of x."""
    assert layer._gather_path(x)
    params = [p for p in layer.parameters() if p.requires_grad] + [x]
    y, _ = layer(x)
    y_ref = reference(x)
    torch.testing.assert_close(y, y_ref, rtol=1e-12, atol=1e-12)
    grads = torch.autograd.grad((y ** 2).sum(), params)
    for got, want in zip(grads, torch.autograd.grad((y_ref ** 2).sum(), params)):
        torch.testing.assert_close(got, want, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("bias", [True, False])
def test_comet_kernel_path_matches_masked_matmuls(bias):
    layer = COMET(COMETConfig(d_in=8, widths=(96,), d_out=2, p_k=0.25, bias=bias, seed=4)).double()
    x = (torch.rand(70, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64) * 2
         - 1).requires_grad_()
    _assert_kernel_path_matches(layer, x, lambda x: layer._backbone(x, layer._route(x))[0])
    layer.reset_usage()
    layer(x)
    assert torch.equal(layer.unit_usage, layer.masks(x)[0].sum(0).double())


def test_sdmlp_kernel_path_matches_masked_matmuls():
    layer = SDMLP(SDMLPConfig(d_in=8, d_out=2, n_neurons=80, k_target=9, anneal_epochs=0,
                              seed=2)).double()
    x = torch.randn(50, 8, generator=torch.Generator().manual_seed(5),
                    dtype=torch.float64).requires_grad_()
    _assert_kernel_path_matches(layer, x, lambda x: layer.hidden(x)[0] @ layer.decoder.T)
    layer.reset_usage()
    layer(x)
    assert torch.equal(layer.unit_usage, layer.hidden(x)[1].sum(0).double())


def test_sdmlp_kernel_path_names_nonfinite_input():
    layer = SDMLP(SDMLPConfig(d_in=4, n_neurons=20, k_target=3, anneal_epochs=0))
    x = torch.randn(5, 4)
    x[2, 1] = np.nan
    with pytest.raises(ValueError, match="^x must be finite; it has 1 NaN"):
        layer(x)
