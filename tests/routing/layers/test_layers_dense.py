"""The dense baseline of the router comparisons (``routing.layers.DenseMLP``): its forward and
gradients against an explicit loop, its usage and cost, and its place in the sweeps."""

import pytest
import torch

from experiments.kinds.routers import build_router
from experiments.runner.specs import ModelSpec, fit_of
from routing.layers import DenseMLP, DenseMLPConfig


def _loop_reference(layer, x):
    """y_b = Σ_j W2[:, j] max(W1[j] · x_b + b1[j], 0) + b2, one example and unit at a time."""
    W1, b1 = layer.hidden.weight, layer.hidden.bias
    W2, b2 = layer.out.weight, layer.out.bias
    rows = []
    for b in range(x.shape[0]):
        y = b2.clone()
        for j in range(W1.shape[0]):
            pre = torch.dot(W1[j], x[b]) + b1[j]
            y = y + W2[:, j] * torch.clamp(pre, min=0)
        rows.append(y)
    return torch.stack(rows)


@pytest.mark.parametrize("d_out", [1, 3])
def test_forward_and_gradients_equal_the_loop_reference(d_out):
    layer = DenseMLP(DenseMLPConfig(d_in=5, width=7, d_out=d_out, seed=3)).double()
    x = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    x.requires_grad_(True)
    y, aux = layer(x)
    assert aux == {}
    x_ref = x.detach().clone().requires_grad_(True)
    y_ref = _loop_reference(layer, x_ref)
    torch.testing.assert_close(y, y_ref, rtol=1e-12, atol=1e-12)
    weights = torch.randn_like(y)
    params = [x, *layer.parameters()]
    grads = torch.autograd.grad((y * weights).sum(), params)
    grads_ref = torch.autograd.grad((y_ref * weights).sum(), [x_ref, *layer.parameters()])
    for g, g_ref in zip(grads, grads_ref):
        torch.testing.assert_close(g, g_ref, rtol=1e-12, atol=1e-12)
        assert g.abs().sum() > 0  # every parameter, and x, gets a gradient


def test_every_unit_counts_in_every_example_and_the_cost_is_the_multiply_adds():
    layer = DenseMLP(DenseMLPConfig(d_in=4, width=9, d_out=2))
    layer(torch.rand(5, 4))
    layer(torch.rand(3, 4))
    assert torch.equal(layer.unit_usage, torch.full((9,), 8.0, dtype=torch.float64))
    assert float(layer.examples_seen) == 8 and layer.dead_fraction() == 0.0
    assert layer.activated_units == layer.total_units == 9
    assert layer.flops_per_example() == 2 * (4 * 9 + 9 * 2)
    layer.track_usage = False
    layer(torch.rand(2, 4))
    assert float(layer.examples_seen) == 8


def test_same_seed_same_weights_and_bad_input_named():
    a, b = (DenseMLP(DenseMLPConfig(d_in=3, width=4, seed=5)) for _ in range(2))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    c = DenseMLP(DenseMLPConfig(d_in=3, width=4, seed=6))
    assert not torch.equal(a.hidden.weight, c.hidden.weight)
    bound = 3 ** -0.5  # U(±1/√fan_in), nn.Linear's default
    assert float(a.hidden.weight.detach().abs().max()) <= bound
    with pytest.raises(ValueError, match="^x must be finite"):
        a(torch.tensor([[0.0, float("nan"), 1.0]]))
    with pytest.raises(ValueError, match=r"^x must have shape \(B, 3\)"):
        a(torch.zeros(2, 4))
    with pytest.raises(ValueError, match="width"):
        DenseMLPConfig(d_in=3, width=0)


def test_sweep_spec_is_the_dense_network_at_the_routers_activated_units():
    spec = ModelSpec("dense_mlp", width=16)
    assert spec.k == 16 and fit_of(spec, None) == "end_to_end"
    with pytest.raises(ValueError, match="k"):
        ModelSpec("dense_mlp", width=16, k=4)  # a dense layer has every unit active
    layer = build_router(spec, dim=8, seed=0)
    assert isinstance(layer, DenseMLP) and layer.activated_units == 16
