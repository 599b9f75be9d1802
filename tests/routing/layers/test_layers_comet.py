"""COMET layer: loop reference, exactly k winners, fixed routing, usage buffers, config errors."""

import io
import math

import numpy as np
import pytest
import torch

from routing.layers.comet import COMET, COMETConfig, k_winners


def _layer(**overrides) -> COMET:
    cfg = dict(d_in=6, widths=(32, 24, 16), d_out=3, p_k=0.25, seed=1)
    cfg.update(overrides)
    return COMET(COMETConfig(**cfg))


def _inputs(n=20, d=6, seed=0, dtype=torch.float32):
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(n, d))).to(dtype)


def _reference_forward(layer: COMET, x: torch.Tensor):
    """COMET §4 Eqs. 4–8, one example at a time, winners by a full sort of (−score, index).

    Returns (y (B, d_out), masks [(B, N_ℓ) bool], hidden [(B, N_ℓ)]) as float64 numpy arrays.
    """
    f = {"relu": lambda a: np.maximum(a, 0.0), "tanh": np.tanh,
         "identity": lambda a: a}[layer.config.activation]
    Vs = [V.detach().double().numpy() for V in layer.routing_weights]
    Ws = [lin.weight.detach().double().numpy() for lin in layer.backbone]
    bs = [lin.bias.detach().double().numpy() if lin.bias is not None else np.zeros(len(W))
          for lin, W in zip(layer.backbone, Ws)]
    ys, masks, hidden = [], [[] for _ in Vs], [[] for _ in Vs]
    for row in x.detach().double().numpy():
        z, h = row, row
        for ell, (V, k) in enumerate(zip(Vs, layer.ks)):
            c = V @ z
            winners = sorted(range(len(c)), key=lambda i: (-c[i], i))[:k]
            m = np.zeros(len(c))
            m[winners] = 1.0
            z = m * c
            h = m * f(Ws[ell] @ h + bs[ell])
            masks[ell].append(m.astype(bool))
            hidden[ell].append(h)
        ys.append(Ws[-1] @ h + bs[-1])
    return np.array(ys), [np.array(m) for m in masks], [np.array(h) for h in hidden]


@pytest.mark.parametrize("activation", ["relu", "tanh", "identity"])
@pytest.mark.parametrize("p_k", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("bias", [True, False])
def test_forward_matches_loop_reference(activation, p_k, bias):
    layer = _layer(activation=activation, p_k=p_k, bias=bias).double()
    x = _inputs(dtype=torch.float64)
    y_ref, masks_ref, hidden_ref = _reference_forward(layer, x)
    y, aux = layer(x)
    assert aux == {} and y.shape == (20, 3) and y.dtype == torch.float64
    np.testing.assert_allclose(y.detach().numpy(), y_ref, rtol=1e-10, atol=1e-12)
    for m, m_ref in zip(layer.masks(x), masks_ref):
        np.testing.assert_array_equal(m.numpy(), m_ref)
    for h, h_ref in zip(layer.hidden_activations(x), hidden_ref):
        np.testing.assert_allclose(h.detach().numpy(), h_ref, rtol=1e-10, atol=1e-12)


def test_float32_forward_close_to_reference():
    layer = _layer()
    x = _inputs()
    y, _ = layer(x)
    y_ref, masks_ref, _ = _reference_forward(layer, x)
    same = np.all([np.array_equal(m.numpy(), r) for m, r in zip(layer.masks(x), masks_ref)])
    assert same  # no score within float32 rounding of the k-th one for these inputs
    np.testing.assert_allclose(y.detach().numpy(), y_ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("p_k", [0.01, 0.1, 0.3, 0.5, 1.0])
def test_exactly_k_winners_per_row(p_k):
    layer = _layer(widths=(50, 7, 1), p_k=p_k)
    for m, n, k in zip(layer.masks(_inputs(64)), (50, 7, 1), layer.ks):
        assert m.dtype == torch.bool and m.shape == (64, n)
        assert (m.sum(1) == k).all() and 1 <= k <= n


def test_k_is_rounded_to_nearest_and_at_least_one():
    assert k_winners(0.1, 512) == 51 and k_winners(0.3, 10) == 3  # 0.3·10 = 3.0000000000000004
    assert k_winners(0.25, 10) == 3 and k_winners(0.001, 100) == 1 and k_winners(1.0, 7) == 7
    assert COMETConfig(d_in=2, widths=(512, 10), p_k=0.1).ks == (51, 1)


def test_ties_go_to_the_lowest_index():
    layer = _layer(p_k=0.25)
    zero = torch.zeros(3, 6)  # every score is 0 in every layer
    for m, k in zip(layer.masks(zero), layer.ks):
        assert (m[:, :k]).all() and not m[:, k:].any()


def test_identical_and_positively_scaled_inputs_share_masks():
    layer = _layer()
    x = _inputs(16)
    twice = torch.cat([x, x, 3.0 * x])  # the routing network is positively homogeneous
    for m in layer.masks(twice):
        assert torch.equal(m[:16], m[16:32]) and torch.equal(m[:16], m[32:])


def _overlap(a: torch.Tensor, b: torch.Tensor, k: int) -> torch.Tensor:
    return (a & b).sum(1).double() / k


def test_mask_overlap_rises_with_input_similarity():
    layer = _layer(d_in=20, widths=(256, 256, 256), p_k=0.1, seed=3)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(200, 20))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    u = rng.normal(size=(200, 20))
    u -= (u * x).sum(1, keepdims=True) * x  # orthogonal to x
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    base = layer.masks(torch.from_numpy(x).float())
    means = []
    for angle in (0.1, 0.4, 0.8, 1.2, 1.5):  # input cosine = cos(angle)
        other = layer.masks(torch.from_numpy(np.cos(angle) * x + np.sin(angle) * u).float())
        means.append(np.mean([_overlap(a, b, k).mean().item()
                              for a, b, k in zip(base, other, layer.ks)]))
    assert all(hi > lo + 0.03 for hi, lo in zip(means, means[1:])), means
    assert means[0] > 0.7 and means[-1] < 0.4  # chance overlap is p_k = 0.1


def test_routing_network_is_frozen_and_every_backbone_parameter_learns():
    layer = _layer(p_k=0.25)
    names = {name for name, _ in layer.named_parameters()}
    assert not any(name.startswith("V") for name in names)
    assert len(list(layer.parameters())) == 8  # 4 weights, 4 biases
    before = [V.clone() for V in layer.routing_weights]
    x = _inputs(64)
    y, _ = layer(x)
    (y ** 2).sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    for V in layer.routing_weights:
        assert not V.requires_grad and V.grad is None
    masks = layer.masks(x)
    torch.optim.Adam(layer.parameters(), lr=0.1).step()
    assert all(torch.equal(V, b) for V, b in zip(layer.routing_weights, before))
    assert all(torch.equal(m, n) for m, n in zip(masks, layer.masks(x)))  # training keeps masks


def test_masked_neurons_get_no_gradient():
    layer = _layer(p_k=0.25, bias=False)
    x = _inputs(1)
    y, _ = layer(x)
    y.sum().backward()
    m1 = layer.masks(x)[0][0]
    assert (layer.backbone[0].weight.grad[~m1] == 0).all()


def test_p_k_one_is_the_plain_mlp():
    layer = _layer(p_k=1.0)
    x = _inputs()
    h = x
    for lin in layer.backbone[:-1]:
        h = torch.relu(lin(h))
    torch.testing.assert_close(layer(x)[0], layer.backbone[-1](h))


def test_usage_buffers():
    layer = _layer(p_k=0.25)
    x = _inputs(40)
    layer(x[:25])
    layer(x[25:])
    layer.masks(x), layer.hidden_activations(x)  # the study helpers do not count
    assert float(layer.examples_seen) == 40  # counted once per batch, not once per layer
    usage = layer.utilisation()
    assert usage.shape == (72,) and usage.dtype == torch.float64
    assert math.isclose(float(usage.sum()), sum(layer.ks))  # Σk_ℓ active neurons per example
    for off, n, k in zip(layer.offsets, layer.config.widths, layer.ks):
        assert math.isclose(float(usage[off:off + n].sum()), k)
    assert ((usage >= 0) & (usage <= 1)).all()
    dead = layer.dead_fraction()
    assert 0.0 <= dead <= 1.0
    expected_dead = np.mean(np.concatenate([(~m.any(0)).numpy() for m in layer.masks(x)]))
    assert math.isclose(dead, expected_dead)

    buffer = io.BytesIO()
    torch.save(layer.state_dict(), buffer)
    buffer.seek(0)
    fresh = _layer(p_k=0.25, seed=99)  # other weights: all of them must come from the file
    fresh.load_state_dict(torch.load(buffer))
    assert torch.equal(fresh.unit_usage, layer.unit_usage)
    assert float(fresh.examples_seen) == 40 and fresh.dead_fraction() == dead
    torch.testing.assert_close(fresh(x)[0], layer(x)[0])


def test_usage_of_the_winners_only_path_counts_the_masks():
    """One hidden ReLU layer on the CPU (the kernel counts usage itself): the counts are the
    masks' column sums, over every batch."""
    layer = _layer(widths=(40,), d_out=1, p_k=0.2)
    x = _inputs(30)
    assert layer._gather_path(x)
    layer(x[:13])
    layer(x[13:])
    assert float(layer.examples_seen) == 30
    assert torch.equal(layer.unit_usage, layer.masks(x)[0].sum(0).double())


def test_track_usage_off_and_reset():
    layer = _layer()
    layer.track_usage = False
    layer(_inputs())
    assert float(layer.examples_seen) == 0
    with pytest.raises(RuntimeError):
        layer.dead_fraction()
    layer.track_usage = True
    layer(_inputs())
    layer.reset_usage()
    assert float(layer.unit_usage.sum()) == 0


def test_sizes_and_flops():
    layer = _layer(d_in=4, widths=(10, 6), d_out=2, p_k=0.5)  # k = (5, 3)
    assert layer.ks == (5, 3) and layer.offsets == (0, 10)
    assert layer.activated_units == 8 and layer.total_units == 16 and layer.n_units == 16
    sparse_routing = 4 * 10 + 5 * 6
    sparse_backbone = 4 * 5 + 5 * 3 + 3 * 2
    assert layer.flops_per_example() == 2 * (sparse_routing + sparse_backbone)
    assert layer.flops_per_example(dense=True) == 2 * ((4 * 10 + 10 * 6) * 2 + 6 * 2)
    info = layer.describe()
    assert info["router"] == "comet" and info["params"] == 4 * 10 + 10 + 10 * 6 + 6 + 6 * 2 + 2


def test_same_seed_same_numbers_and_no_global_rng():
    state = torch.random.get_rng_state()
    a, b, c = _layer(seed=4), _layer(seed=4), _layer(seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)
    for ta, tb in zip(a.state_dict().values(), b.state_dict().values()):
        assert torch.equal(ta, tb)
    assert not torch.equal(a.V1, c.V1) and not torch.equal(a.backbone[0].weight,
                                                           c.backbone[0].weight)
    x = _inputs()
    assert torch.equal(a(x)[0], b(x)[0])
    # masks depend on the seed and shapes only, not on the backbone's bias or d_out
    d = _layer(seed=4, bias=False, d_out=1)
    assert torch.equal(d.V1, a.V1) and all(torch.equal(m, n)
                                            for m, n in zip(d.masks(x), a.masks(x)))


def test_routing_and_backbone_distributions():
    layer = _layer(d_in=100, widths=(400,), seed=0)
    bound = 100 ** -0.5
    for t in (layer.V1, layer.backbone[0].weight, layer.backbone[0].bias):
        assert t.abs().max() <= bound
    assert 0.9 * bound < layer.V1.abs().max()
    assert abs(float(layer.V1.std()) - bound / math.sqrt(3)) < 0.01 * bound
    assert not torch.equal(layer.V1, layer.backbone[0].weight)  # independent draws


def test_empty_batch():
    layer = _layer()
    y, _ = layer(torch.zeros(0, 6))
    assert y.shape == (0, 3) and float(layer.examples_seen) == 0


@pytest.mark.parametrize("field, value", [
    ("d_in", 0), ("d_in", 2.5), ("widths", ()), ("widths", (4, 0)), ("widths", 8),
    ("d_out", 0), ("p_k", 0.0), ("p_k", 1.5), ("p_k", float("nan")), ("activation", "gelu"),
    ("bias", 1), ("optimizer", "lbfgs"), ("lr", 0.0), ("lr", -1e-3), ("seed", -1),
])
def test_bad_config_raises_naming_the_parameter(field, value):
    cfg = dict(d_in=6, widths=(8,), d_out=1)
    cfg[field] = value
    with pytest.raises(ValueError, match=field):
        COMETConfig(**cfg)


def test_config_not_a_comet_config():
    with pytest.raises(ValueError, match="config"):
        COMET({"d_in": 3})


@pytest.mark.parametrize("x", [
    torch.zeros(5), torch.zeros(5, 7), torch.zeros(2, 5, 6), torch.zeros(4, 6, dtype=torch.float64),
    torch.zeros(4, 6, dtype=torch.int64), torch.full((4, 6), float("nan")), np.zeros((4, 6)),
])
def test_bad_input_raises_naming_x(x):
    with pytest.raises(ValueError, match="x must"):
        _layer()(x)


@pytest.mark.parametrize("widths", [(64, 64, 64), (64,)])  # masked matmuls; the kernel
def test_routing_overflow_names_x_and_counts_nothing(widths):
    """A finite x of 3e38 overflows the float32 routing scores V_1 x. It must raise an error
    naming x and the overflow (``c * m`` once made a masked -inf into inf·0 = NaN, and
    ``topk_mask`` complained of NaN scores), from every method, and count no usage."""
    layer = _layer(widths=widths)
    x = torch.full((4, 6), 3e38)
    for method in (layer, layer.masks, layer.hidden_activations):
        with pytest.raises(ValueError, match=r"^x must be small enough.*c_1 = V_1 z_0 "
                                             r"overflowed"):
            method(x)
    assert float(layer.examples_seen) == 0 and float(layer.unit_usage.sum()) == 0
    ok = layer.masks(x / 1e37)  # the same direction, scaled down: exactly k_ℓ per row
    assert [int(m.sum(1).min()) for m in ok] == [int(m.sum(1).max()) for m in ok] == list(
        layer.ks)


def test_overflow_in_a_deeper_layer_names_that_layer():
    layer = _layer()
    with torch.no_grad():
        layer.V2.mul_(1e38)  # c_1 finite, c_2 = V_2 z_1 overflows
    with pytest.raises(ValueError, match=r"c_2 = V_2 z_1 overflowed"):
        layer(_inputs() * 10)


def test_non_finite_routing_weights_are_named():
    layer = _layer()
    with torch.no_grad():
        layer.V1[3, 2] = float("nan")
    with pytest.raises(ValueError, match=r"^the routing weights V1 must be finite"):
        layer(_inputs())


@pytest.mark.cuda
def test_cuda_matches_cpu():
    layer = _layer().double()
    x = _inputs(dtype=torch.float64)
    y_cpu = layer(x)[0]
    masks_cpu = layer.masks(x)
    layer = layer.cuda()
    torch.testing.assert_close(layer(x.cuda())[0].cpu(), y_cpu)
    assert all(torch.equal(m.cpu(), n) for m, n in zip(layer.masks(x.cuda()), masks_cpu))
    assert layer.unit_usage.device.type == "cuda"


@pytest.mark.parametrize("k", [1, 3, 9, 10])
def test_kwta_mask_fast_and_tie_paths_equal_the_numpy_rule(k):
    """COMET's C_k is ``routing.torch_twins.topk_mask``: its fast path (no tie at the k-th
    value) and its tie path both equal ``routing.topk.topk_mask`` (numpy, ties by index)."""
    from routing.topk import topk_mask as numpy_topk_mask
    from routing.torch_twins import topk_mask
    rng = np.random.default_rng(k)
    real = torch.from_numpy(rng.normal(size=(50, 10)))
    tied = torch.from_numpy(rng.integers(0, 3, size=(50, 10)).astype(np.float64))  # many ties
    for scores in (real, tied, torch.cat([real, tied])):
        np.testing.assert_array_equal(topk_mask(scores, k).numpy(),
                                      numpy_topk_mask(scores.numpy(), k))
