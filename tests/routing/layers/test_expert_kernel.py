"""The MoE layers' CPU kernels (routing.layers._expert_kernel) against the torch expert bank
they replace on the CPU, and the short-row top-K against a stable sort."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from routing._projection import FEW
from routing.layers import _experts
from routing.layers._expert_kernel import TOPK_ROWS_MAX_K, expert_mlp, moe_forward, topk_rows
from routing.layers._experts import ExpertBank, _topk_lowest_index_sort
from routing.layers.sigma_moe import SigmaMoE, SigmaMoEConfig
from routing.layers.topk_moe import TopKMoE, TopKMoEConfig


def _bank_case(B, K, E, G, d_in, d_out, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    bank = ExpertBank(E, d_in, G, d_out).to(dtype)
    bank.reset_parameters("standard", g)
    x = torch.randn(B, d_in, generator=g, dtype=dtype).requires_grad_()
    idx = torch.randint(0, E, (B, K), generator=g)  # repeats in a row, unused experts
    gate = torch.rand(B, K, generator=g, dtype=dtype).requires_grad_()
    return bank, x, idx, gate


def _value_and_grads(fn, bank, x, gate, seed):
    y = fn()
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(seed), dtype=y.dtype)
    inputs = [x, gate, bank.W1, bank.W2]
    if not y.requires_grad:  # the torch bank's empty batch: a constant zero output
        return [y] + [None] * len(inputs)
    return [y] + list(torch.autograd.grad(y, inputs, dy, allow_unused=True))


@settings(max_examples=40, deadline=None)
@given(B=st.integers(0, 30), K=st.integers(1, 4), E=st.integers(1, 6), G=st.integers(1, 20),
       d_in=st.integers(1, 5), d_out=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_kernel_equals_the_torch_bank_in_value_and_gradients(B, K, E, G, d_in, d_out, seed):
    bank, x, idx, gate = _bank_case(B, K, E, G, d_in, d_out, seed)
    kernel = _value_and_grads(lambda: expert_mlp(x, idx, gate, bank.W1, bank.W2),
                              bank, x, gate, seed)
    torch_path = _value_and_grads(lambda: bank._forward_sorted(x, idx, gate), bank, x, gate,
                                  seed)
    for name, a, b in zip(("y", "dx", "dgate", "dW1", "dW2"), kernel, torch_path):
        b = torch.zeros_like(a) if b is None else b  # unused inputs, empty batch
        torch.testing.assert_close(a, b, msg=name)


def test_kernel_passes_gradcheck():
    bank, x, idx, gate = _bank_case(7, 3, 4, 5, 3, 2, seed=3)
    W1, W2 = (bank.W1.detach().clone().requires_grad_(), bank.W2.detach().clone()
              .requires_grad_())
    assert torch.autograd.gradcheck(lambda *t: expert_mlp(t[0], idx, *t[1:]),
                                    (x, gate, W1, W2))


def test_kernel_float32_agrees_with_float64():
    bank, x, idx, gate = _bank_case(256, 4, 16, 16, 8, 1, seed=5)
    y64 = expert_mlp(x, idx, gate, bank.W1, bank.W2)
    y32 = expert_mlp(x.float(), idx, gate.float(), bank.W1.float(), bank.W2.float())
    assert y32.dtype == torch.float32
    torch.testing.assert_close(y32.double(), y64, rtol=1e-5, atol=1e-5)


def test_kernel_propagates_nan_like_torch():
    bank, x, idx, gate = _bank_case(6, 2, 3, 4, 3, 2, seed=1)
    x = x.detach().clone()
    x[2, 1] = float("nan")
    y = expert_mlp(x, idx, gate, bank.W1, bank.W2)
    torch.testing.assert_close(y, bank._forward_sorted(x, idx, gate), equal_nan=True)
    assert torch.isnan(y[2]).all() and not torch.isnan(y[[0, 1, 3, 4, 5]]).any()


@pytest.mark.parametrize("bad", [-1, 4])
def test_kernel_rejects_expert_indices_out_of_range(bad):
    bank, x, idx, gate = _bank_case(5, 2, 4, 3, 2, 1, seed=0)
    idx = idx.clone()
    idx[3, 1] = bad
    with pytest.raises(IndexError, match=r"expert_idx must lie in \[0, 4\)"):
        expert_mlp(x, idx, gate, bank.W1, bank.W2)


def test_bank_uses_the_kernel_for_small_experts_only(monkeypatch):
    calls = []
    monkeypatch.setattr(_experts, "expert_mlp",
                        lambda *args: calls.append(1) or expert_mlp(*args))
    small = _bank_case(64, 2, 4, 8, 4, 1, seed=0, dtype=torch.float32)
    small[0](*small[1:])
    assert calls == [1]
    monkeypatch.setattr(_experts, "KERNEL_MAX_WORK", 64 * 2 * 8 * 4 // 4 - 1)
    small[0](*small[1:])
    assert calls == [1]  # over the work limit: the torch path


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 30), n=st.integers(1, 40), seed=st.integers(0, 10_000),
       levels=st.sampled_from([2, 5, 1000]), double=st.booleans())
def test_topk_rows_equals_a_stable_descending_sort(rows, n, seed, levels, double):
    """Few levels make ties common; NaN must rank above +inf, -inf below every number."""
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, levels, (rows, n), generator=gen).to(
        torch.float64 if double else torch.float32)
    specials = torch.tensor([float("nan"), float("inf"), -float("inf")], dtype=scores.dtype)
    where = torch.rand(rows, n, generator=gen) < 0.1
    pick = torch.randint(0, 3, (rows, n), generator=gen)
    scores = torch.where(where, specials[pick], scores)
    for k in {1, min(n, TOPK_ROWS_MAX_K) // 2 or 1, min(n, TOPK_ROWS_MAX_K)}:
        assert torch.equal(topk_rows(scores, k), _topk_lowest_index_sort(scores, k)[1])


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 30), n=st.integers(1, FEW), seed=st.integers(0, 10_000),
       levels=st.sampled_from([2, 5, 1000]), double=st.booleans())
def test_topk_rows_of_few_scores_without_nan(rows, n, seed, levels, double):
    """Rows of at most FEW scores without NaN are ranked in registers (``top_of_few``):
    the same order as the stable sort, with ties and infinities."""
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, levels, (rows, n), generator=gen).to(
        torch.float64 if double else torch.float32)
    specials = torch.tensor([float("inf"), -float("inf")], dtype=scores.dtype)
    where = torch.rand(rows, n, generator=gen) < 0.1
    scores = torch.where(where, specials[torch.randint(0, 2, (rows, n), generator=gen)], scores)
    for k in {1, min(n, TOPK_ROWS_MAX_K) // 2 or 1, min(n, TOPK_ROWS_MAX_K)}:
        assert torch.equal(topk_rows(scores, k), _topk_lowest_index_sort(scores, k)[1])


@pytest.mark.parametrize("k", [0, 6, TOPK_ROWS_MAX_K + 1])
def test_topk_rows_rejects_k_out_of_range(k):
    scores = torch.zeros(3, 5 if k == 6 else 40)
    with pytest.raises(ValueError, match="k must be in"):
        topk_rows(scores, k)


def test_kernel_skips_dx_only_when_x_needs_no_gradient():
    bank, x, idx, gate = _bank_case(40, 3, 5, 6, 4, 2, seed=7)
    W1, W2 = (bank.W1.detach().clone().requires_grad_(), bank.W2.detach().clone()
              .requires_grad_())
    dy = torch.randn(40, 2, dtype=x.dtype, generator=torch.Generator().manual_seed(1))
    with_dx = torch.autograd.grad(expert_mlp(x.requires_grad_(), idx, gate, W1, W2),
                                  (gate, W1, W2), dy)
    x_const = x.detach()
    y = expert_mlp(x_const, idx, gate, W1, W2)
    y.backward(dy)
    assert x_const.grad is None
    for got, want in zip((gate.grad, W1.grad, W2.grad), with_dx):
        torch.testing.assert_close(got, want)



# -- the whole layer fused (moe_forward) against the layers' torch path ------------------------
@pytest.mark.parametrize("kind,kw", [("sigma", {}), ("sigma", {"k": 1}), ("sigma", {"k": 6}),
                                     ("topk", {}), ("topk", {"k": 1}), ("topk", {"k": 6})])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch", [0, 3, 200])
def test_fused_moe_equals_the_torch_path(kind, kw, dtype, batch):
    config = {"d_in": 5, "d_out": 2, "n_experts": 6, "expert_size": 4, "k": 2, "seed": 1, **kw}
    layer = (SigmaMoE(SigmaMoEConfig(**config)) if kind == "sigma"
             else TopKMoE(TopKMoEConfig(**config))).to(dtype)
    gen = torch.Generator().manual_seed(batch)
    x = torch.randn(batch, 5, generator=gen, dtype=dtype).requires_grad_()
    layer.reset_usage()
    y, aux = layer(x)  # the fused kernel
    usage = layer.unit_usage.clone()
    layer.reset_usage()
    y_ref, aux_ref = layer._forward_torch(x)
    assert torch.equal(usage, layer.unit_usage)
    tol = {} if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(y, y_ref, **tol)
    (_, loss), (_, loss_ref) = *aux.items(), *aux_ref.items()
    torch.testing.assert_close(loss, loss_ref, **tol)
    if batch == 0:
        return
    params = [x] + [p for p in layer.parameters()]
    dy = torch.randn(y.shape, generator=gen, dtype=dtype)
    total, total_ref = (y * dy).sum() + 7 * loss, (y_ref * dy).sum() + 7 * loss_ref
    for p, got, want in zip(("x", "router", "W1", "W2"), torch.autograd.grad(total, params),
                            torch.autograd.grad(total_ref, params)):
        torch.testing.assert_close(got, want, msg=p, **tol)


@pytest.mark.parametrize("gate,aux", [("sigmoid", "entropy"), ("softmax", "load_balance")])
def test_fused_moe_passes_gradcheck(gate, aux):
    gen = torch.Generator().manual_seed(2)
    x, router = (torch.randn(9, 3, generator=gen, dtype=torch.float64), torch.randn(
        5, 3, generator=gen, dtype=torch.float64))
    W1, W2 = (torch.randn(5, 3, 4, generator=gen, dtype=torch.float64),
              torch.randn(5, 4, 2, generator=gen, dtype=torch.float64))
    tensors = [t.requires_grad_() for t in (x, router, W1, W2)]

    def f(*t):
        y, loss, _ = moe_forward(*t, 2, gate, aux, 0.3)
        return y, loss

    assert torch.autograd.gradcheck(f, tensors)


def test_fused_moe_rejects_bad_arguments():
    x, router = torch.zeros(2, 3), torch.zeros(5, 3)
    W1, W2 = torch.zeros(5, 3, 4), torch.zeros(5, 4, 1)
    with pytest.raises(ValueError, match=r"k must be in \[1, 5\]"):
        moe_forward(x, router, W1, W2, 6, "sigmoid", "entropy", 0.1)
    with pytest.raises(ValueError, match="gate must be one of"):
        moe_forward(x, router, W1, W2, 2, "relu", "entropy", 0.1)
