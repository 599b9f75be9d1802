"""PKM's CPU kernels (routing.layers._pkm_kernel) against the torch selection and layer
they replace on the CPU (Lample et al. 2019; Csordás et al. 2023 §3.2, Eq. 8)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.layers._pkm_kernel import FRONTIER_MAX, pkm_forward, pkm_select
from routing.layers.pkm import PKM, PKMConfig


def _layer(n_keys, k, dtype=torch.float64):
    return PKM(PKMConfig(d_in=4, d_out=2, n_keys=n_keys, d_key=4, k=k)).to(dtype)


@settings(max_examples=60, deadline=None)
@given(n_keys=st.integers(1, 12) | st.sampled_from([FRONTIER_MAX, FRONTIER_MAX + 3]),
       data=st.data(), rows=st.integers(1, 20),
       levels=st.sampled_from([2, 4, 1000]), seed=st.integers(0, 10_000),
       double=st.booleans())
def test_selection_equals_the_torch_selection(n_keys, data, rows, levels, seed, double):
    """Few score levels make ties, inside the top k and at its edge, common. Up to
    FRONTIER_MAX ranks per half the merge scans its frontier, above it uses a heap."""
    k = data.draw(st.integers(1, n_keys * n_keys), label="k")
    dtype = torch.float64 if double else torch.float32
    layer = _layer(n_keys, k, dtype)
    gen = torch.Generator().manual_seed(seed)
    u = torch.randint(0, levels, (rows, 2, n_keys), generator=gen).to(dtype) / 3
    slot, pos_a, pos_b = pkm_select(u, k)
    ref_slot, ref_score = layer._select_torch(u)
    assert torch.equal(slot, ref_slot)
    assert torch.equal(slot, pos_b * n_keys + pos_a)
    assert torch.equal(u[:, 1].gather(1, pos_b) + u[:, 0].gather(1, pos_a), ref_score)


def test_selection_hands_non_finite_scores_back_to_torch():
    layer = _layer(4, 5)
    x = torch.randn(6, 4, dtype=torch.float64)
    u = torch.zeros(6, 2, 4, dtype=torch.float64)
    u[3, 1, 2] = float("nan")
    assert pkm_select(u, 5) is None
    huge = torch.zeros(2, 2, 4)  # finite scores whose sums overflow float32 to -inf
    huge[1, :, 0] = -3e38
    assert pkm_select(huge, 5) is None
    assert pkm_select(huge / 2, 5) is not None
    x[2, 0] = float("inf")  # the layer rejects a non-finite x, naming it
    with pytest.raises(ValueError, match="^x must be finite"):
        layer.route(x)


def test_selection_rejects_k_out_of_range():
    with pytest.raises(ValueError, match=r"k must be in \[1, 9\]"):
        pkm_select(torch.zeros(2, 2, 3), 10)


def _torch_path(layer, x):
    """The layer's torch route and value sum (what the fused kernel replaces)."""
    idx, gate = layer.route(x)
    return idx, (gate.unsqueeze(2) * layer.values[idx]).sum(1)


@settings(max_examples=60, deadline=None)
@given(n_keys=st.integers(1, 12) | st.sampled_from([FRONTIER_MAX + 3]), data=st.data(),
       rows=st.integers(1, 20), levels=st.sampled_from([2, 3, 1000]),
       seed=st.integers(0, 10_000), double=st.booleans(), relu=st.booleans(),
       d_out=st.sampled_from([1, 3]))
def test_fused_forward_selects_the_same_slots_as_pkm_select(n_keys, data, rows, levels, seed,
                                                            double, relu, d_out):
    """Integer queries and sub-keys make every sum exact and, with few levels, ties common:
    in the halves (more candidates than k_half²), and at the k-th largest sum (the merge
    decides). The fused path must pick pkm_select's set and give the torch path's y and
    gradients; with ReLU, d_out = 1 and k >= n_keys the untied rows take the one-mask path,
    the tied ones their winners one at a time."""
    k = data.draw(st.integers(1, n_keys * n_keys), label="k")
    dtype = torch.float64 if double else torch.float32
    layer = PKM(PKMConfig(d_in=4, d_out=d_out, n_keys=n_keys, d_key=4, k=k,
                          project_query=False,
                          activation="relu" if relu else "softmax")).to(dtype)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        layer.keys.copy_(torch.randint(-1, levels - 1, layer.keys.shape, generator=gen))
    x = torch.randint(-2, 3, (rows, 4), generator=gen).to(dtype)
    y, slots = pkm_forward(x, None, layer.keys, layer.values, k, layer.config.activation)
    idx, y_ref = _torch_path(layer, x)
    assert torch.equal(slots().sort(1).values, idx.sort(1).values)
    dy = torch.randn(y.shape, generator=gen, dtype=dtype)
    grads = torch.autograd.grad(y, (layer.keys, layer.values), dy)
    for got, want in zip(grads, torch.autograd.grad(y_ref, (layer.keys, layer.values), dy)):
        torch.testing.assert_close(got, want, **({} if double else dict(rtol=1e-4, atol=1e-3)))
    # y sums the same terms in another order: rounding errors up to a few ulps of the sum of
    # the terms' magnitudes, which cancel (scores up to ~10^4)
    _, gate = layer.route(x)
    magnitude = (gate.unsqueeze(2) * layer.values[idx]).abs().sum(1)
    eps = torch.finfo(dtype).eps
    assert bool(((y - y_ref).abs() <= 4 * k * eps * magnitude + 1e-12).all())


@pytest.mark.parametrize("kw", [dict(n_keys=16, k=64), dict(n_keys=32, k=256),
                                dict(n_keys=12, k=7), dict(n_keys=9, k=81),
                                dict(n_keys=10, k=30, activation="softmax", init="lample"),
                                dict(n_keys=6, k=20, d_key=8, project_query=False),
                                dict(n_keys=5, k=4, d_out=3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_layer_equals_the_torch_path_with_its_gradients(kw, dtype):
    layer = PKM(PKMConfig(**{"d_in": 8, **kw})).to(dtype)
    gen = torch.Generator().manual_seed(1)
    x = (torch.rand(300, 8, generator=gen, dtype=dtype) * 2 - 1).requires_grad_()
    layer.reset_usage()
    y, aux = layer(x)  # the fused path
    usage = layer.unit_usage.clone()
    idx, y_ref = _torch_path(layer, x)
    tol = {} if dtype == torch.float64 else dict(rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(y, y_ref, **tol)
    assert aux == {}
    ref_usage = torch.zeros_like(usage).index_add_(
        0, idx.reshape(-1), torch.ones(idx.numel(), dtype=usage.dtype))
    assert torch.equal(usage, ref_usage)
    dy = torch.randn(y.shape, generator=gen, dtype=dtype)
    inputs = [x, *layer.parameters()]
    for got, want in zip(torch.autograd.grad(y, inputs, dy),
                         torch.autograd.grad(y_ref, inputs, dy)):
        torch.testing.assert_close(got, want, **tol)


@pytest.mark.parametrize("activation", ["relu", "softmax"])
@pytest.mark.parametrize("project", [True, False])
def test_fused_gradients_pass_gradcheck(activation, project):
    layer = PKM(PKMConfig(d_in=4, d_out=2, n_keys=5, d_key=4, k=6, activation=activation,
                          project_query=project)).double()
    x = torch.randn(7, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    params = [x.requires_grad_(), layer.keys, layer.values]
    params += [layer.query] if project else []

    def f(x, keys, values, query=None):
        return pkm_forward(x, query, keys, values, 6, activation)[0]

    assert torch.autograd.gradcheck(f, params)


def test_fused_forward_hands_non_finite_scores_back_to_torch():
    layer = PKM(PKMConfig(d_in=4, d_out=2, n_keys=4, d_key=4, k=5)).double()
    x = torch.randn(6, 4, dtype=torch.float64)
    x[2, 0] = float("inf")
    assert pkm_forward(x, layer.query, layer.keys, layer.values, 5, "relu") is None
    with pytest.raises(ValueError, match="^x must be finite"):  # named once handed back
        layer(x)
    assert float(layer.examples_seen) == 0
    huge = PKM(PKMConfig(d_in=4, d_out=1, n_keys=3, d_key=4, k=2, project_query=False))
    with torch.no_grad():
        huge.keys.fill_(1.0)
    big = torch.full((1, 4), 1.5e38)  # half scores 3e38: finite, their sum is not
    assert pkm_forward(big, None, huge.keys, huge.values, 2, "relu") is None
    assert pkm_forward(big / 4, None, huge.keys, huge.values, 2, "relu") is not None


def test_fused_forward_rejects_bad_arguments():
    layer = PKM(PKMConfig(d_in=4, n_keys=3, d_key=4, k=2))
    x = torch.zeros(2, 4)
    with pytest.raises(ValueError, match=r"k must be in \[1, 9\]"):
        pkm_forward(x, layer.query, layer.keys, layer.values, 10, "relu")
    with pytest.raises(ValueError, match="activation must be"):
        pkm_forward(x, layer.query, layer.keys, layer.values, 2, "gelu")
    with pytest.raises(ValueError, match="shapes do not fit"):
        pkm_forward(torch.zeros(2, 5), layer.query, layer.keys, layer.values, 2, "relu")
