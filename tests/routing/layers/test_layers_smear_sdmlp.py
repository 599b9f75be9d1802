"""SMEAR and SDMLP layers: fast paths against loop references, routing invariants, training
hooks, config validation, seeding, saving and devices."""

import dataclasses

import pytest
import torch

from routing.layers.sdmlp import SDMLP, SDMLPConfig, annealed_k
from routing.layers.smear import SMEAR, SMEARConfig


def _x(n: int, d: int = 8, seed: int = 0, dtype=torch.float64) -> torch.Tensor:
    return (2 * torch.rand(n, d, generator=torch.Generator().manual_seed(seed)) - 1).to(dtype)


# -- SMEAR ----------------------------------------------------------------------------------
def smear_reference(layer: SMEAR, x: torch.Tensor) -> torch.Tensor:
    """Muqeeth et al. 2024 §3 with loops: merge every parameter of every expert by hand for
    each example, then run the merged expert."""
    c = layer.config
    act = {"silu": torch.nn.functional.silu, "relu": torch.relu,
           "gelu": torch.nn.functional.gelu}[c.activation]
    out = []
    for b in range(x.shape[0]):
        logits = [sum(x[b, i] * layer.router[i, e] for i in range(c.d_in))
                  for e in range(c.n_experts)]
        p = torch.softmax(torch.stack(logits), dim=0)
        w1 = sum(p[e] * layer.w1[e] for e in range(c.n_experts))
        w2 = sum(p[e] * layer.w2[e] for e in range(c.n_experts))
        h = x[b] @ w1
        if c.bias:
            h = h + sum(p[e] * layer.b1[e] for e in range(c.n_experts))
        y = act(h) @ w2
        if c.bias:
            y = y + sum(p[e] * layer.b2[e] for e in range(c.n_experts))
        out.append(y)
    return torch.stack(out)


@pytest.mark.parametrize("kw", [
    dict(n_experts=3, expert_size=5, d_out=1),                      # outer, then merged route
    dict(n_experts=3, expert_size=2, d_out=4, bias=False),          # merged, then outer route
    dict(n_experts=1, expert_size=4, d_out=2, activation="relu"),
])
def test_smear_matches_loop_reference(kw):
    layer = SMEAR(SMEARConfig(d_in=8, seed=3, **kw)).double()
    x = _x(6)
    y, aux = layer(x)
    assert aux == {} and y.shape == (6, layer.config.d_out) and y.dtype == torch.float64
    torch.testing.assert_close(y, smear_reference(layer, x), rtol=1e-12, atol=1e-12)


def test_smear_one_hot_router_is_that_expert():
    layer = SMEAR(SMEARConfig(d_in=8, n_experts=4, expert_size=6, d_out=2, seed=1)).double()
    x = _x(5).abs() + 0.5  # x_0 >= 0.5, so expert 2's logit is >= 5000: p is exactly one-hot
    with torch.no_grad():
        layer.router.zero_()
        layer.router[0, 2] = 1e4
    assert torch.equal(layer.router_probs(x), torch.eye(4, dtype=x.dtype)[[2] * 5])
    y, _ = layer(x)
    alone = torch.nn.functional.silu(x @ layer.w1[2] + layer.b1[2]) @ layer.w2[2] + layer.b2[2]
    torch.testing.assert_close(y, alone, rtol=1e-14, atol=1e-14)


def test_smear_usage_is_router_probabilities():
    layer = SMEAR(SMEARConfig(d_in=8, n_experts=5, expert_size=3))
    x = _x(7, dtype=torch.float32)
    layer(x)
    assert float(layer.examples_seen) == 7
    torch.testing.assert_close(layer.unit_usage, layer.router_probs(x).double().sum(0))
    assert float(layer.unit_usage.sum()) == pytest.approx(7.0, rel=1e-6)
    torch.testing.assert_close(layer.utilisation().sum(), torch.tensor(1.0, dtype=torch.float64))


def test_smear_expert_dropout_only_in_training_and_seeded():
    cfg = SMEARConfig(d_in=8, n_experts=4, expert_size=3, expert_dropout=0.5, seed=2)
    a, b = SMEAR(cfg), SMEAR(cfg)
    x = _x(64, dtype=torch.float32)
    ya, _ = a(x)
    yb, _ = b(x)
    assert torch.equal(ya, yb)  # same seed, same dropped experts
    assert float(a.unit_usage.sum()) == pytest.approx(64.0, rel=1e-5)  # still distributions
    a.eval()
    a.reset_usage()
    y_eval, _ = a(x)
    torch.testing.assert_close(a.unit_usage, a.router_probs(x).double().sum(0))
    assert not torch.allclose(y_eval, ya)


def test_smear_gradients_reach_every_parameter():
    layer = SMEAR(SMEARConfig(d_in=8, n_experts=3, expert_size=4))
    x = _x(16, dtype=torch.float32)
    y, _ = layer(x)
    (y - x[:, :1].sin()).pow(2).mean().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and bool((p.grad != 0).any()), name


def test_smear_costs_follow_section_3():
    layer = SMEAR(SMEARConfig(d_in=8, d_out=1, n_experts=4, expert_size=16))
    cost = layer.cost()
    weights = 16 * (8 + 1)
    assert cost["paper_formula"] == (1 * 4 + 4 * 2) * weights // 2  # (L·4 + N·2)·d·m, L = 1
    assert cost["merge"] == 2 * 4 * (weights + 16 + 1)
    assert cost["expert"] == 2 * weights and cost["router"] == 2 * 8 * 4
    assert layer.flops_per_example() == cost["total"] == sum(
        cost[k] for k in ("router", "merge", "expert"))
    assert (layer.activated_units, layer.total_units, layer.n_units) == (16, 64, 4)


@pytest.mark.parametrize("field, value", [
    ("d_in", 0), ("d_out", 0), ("n_experts", 0), ("expert_size", 0), ("activation", "tanh"),
    ("bias", 1), ("expert_dropout", 1.0), ("expert_dropout", -0.1), ("optimizer", "rmsprop"),
    ("lr", 0.0), ("seed", -1),
])
def test_smear_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        SMEARConfig(**{"d_in": 8, field: value})


def test_smear_rejects_wrong_input_shape():
    with pytest.raises(ValueError, match=r"\(B, 8\)"):
        SMEAR(SMEARConfig(d_in=8))(torch.zeros(3, 7))


def test_smear_seeded():
    x = _x(4, dtype=torch.float32)
    y1, _ = SMEAR(SMEARConfig(d_in=8, seed=5))(x)
    y2, _ = SMEAR(SMEARConfig(d_in=8, seed=5))(x)
    y3, _ = SMEAR(SMEARConfig(d_in=8, seed=6))(x)
    assert torch.equal(y1, y2) and not torch.equal(y1, y3)


def test_smear_state_dict_round_trip_keeps_usage():
    cfg = SMEARConfig(d_in=8, n_experts=3, expert_size=4)
    layer = SMEAR(cfg)
    layer(_x(9, dtype=torch.float32))
    copy = SMEAR(dataclasses.replace(cfg, seed=99))
    copy.load_state_dict(layer.state_dict())
    assert torch.equal(copy.unit_usage, layer.unit_usage)
    assert float(copy.examples_seen) == 9
    x = _x(3, seed=1, dtype=torch.float32)
    assert torch.equal(copy(x)[0], layer(x)[0])


# -- SDMLP ----------------------------------------------------------------------------------
def sdmlp_reference(layer: SDMLP, x: torch.Tensor) -> torch.Tensor:
    """Bricken et al. 2023 Eq. 4 with loops over examples and neurons (k annealing mode)."""
    c, k = layer.config, layer.current_k
    out = []
    for b in range(x.shape[0]):
        v = list(x[b])
        if c.split_signs:
            v = [max(t, 0) for t in v] + [max(-t, 0) for t in v]
        if c.lift_inputs:
            v = v + [torch.ones((), dtype=x.dtype)]
        norm = sum(t * t for t in v) ** 0.5
        v = [t / norm for t in v]
        a = [sum(layer.encoder[j, i] * v[i] for i in range(len(v)))
             for j in range(c.n_neurons)]
        order = sorted(range(c.n_neurons), key=lambda j: (-float(a[j].detach()), j))
        inhibition = max(float(a[order[k]].detach()), 0.0) if k < c.n_neurons else 0.0
        h = [max(a[j] - inhibition, 0) if j in order[:k] else 0 for j in range(c.n_neurons)]
        out.append(torch.stack([sum(layer.decoder[o, j] * h[j] for j in range(c.n_neurons))
                                for o in range(c.d_out)]))
    return torch.stack(out)


@pytest.mark.parametrize("kw, epoch", [
    (dict(), 0),                                   # k = n_neurons: no inhibition
    (dict(), 5),                                   # k = k_target
    (dict(d_out=3, lift_inputs=False), 2),
    (dict(split_signs=True, nonneg_decoder=True), 5),
])
def test_sdmlp_matches_loop_reference(kw, epoch):
    cfg = SDMLPConfig(d_in=8, n_neurons=12, k_target=3, anneal_epochs=4, seed=4, **kw)
    layer = SDMLP(cfg).double()
    layer.set_training_progress(epoch)
    x = _x(5)
    y, aux = layer(x)
    assert aux == {} and y.shape == (5, cfg.d_out)
    torch.testing.assert_close(y, sdmlp_reference(layer, x), rtol=1e-12, atol=1e-12)


def test_sdmlp_keeps_exactly_k_and_subtracts_the_next():
    layer = SDMLP(SDMLPConfig(d_in=8, n_neurons=40, k_target=6, anneal_epochs=0)).double()
    x = _x(20)
    h, active = layer.hidden(x)
    assert torch.equal(active.sum(1), torch.full((20,), 6))
    a = layer.normalise_inputs(x) @ layer.encoder.T
    top = torch.sort(a, dim=1, descending=True).values
    assert torch.equal(active, a >= top[:, 5:6])  # continuous data: no ties
    expected = (a - top[:, 6:7].clamp(min=0)).clamp(min=0) * active
    torch.testing.assert_close(h, expected, rtol=0, atol=0)
    # A winner stays on by a_j − [a_(k+1)]_+ > 0 unless its own activation is <= 0 (the
    # lifted inputs have both signs, so some examples have fewer than k positive ones).
    assert bool((h[active & (a > 0)] > 0).all())
    assert torch.equal(h > 0, active & (a > 0))
    layer(x)  # the winners-only kernel counts usage itself: each neuron's examples won
    assert torch.equal(layer.unit_usage, active.sum(0).double())


def test_sdmlp_ties_go_to_the_lowest_index():
    layer = SDMLP(SDMLPConfig(d_in=2, n_neurons=6, k_target=2, anneal_epochs=0)).double()
    with torch.no_grad():
        layer.encoder.copy_(torch.tensor([1.0, 0.0, 0.0]).repeat(6, 1))  # six equal neurons
    h, active = layer.hidden(torch.tensor([[0.3, 0.7]], dtype=torch.float64))
    assert active.tolist() == [[True, True, False, False, False, False]]
    assert torch.equal(h, torch.zeros_like(h))  # a_j − a_(k+1) = 0 for tied winners


def test_sdmlp_sgd_steps_keep_the_constraints():
    cfg = SDMLPConfig(d_in=8, n_neurons=30, k_target=4, anneal_epochs=2, nonneg_decoder=True)
    layer = SDMLP(cfg)
    opt = torch.optim.SGD(layer.parameters(), lr=5.0)
    x = _x(64, dtype=torch.float32)
    target = x[:, 0] - x[:, 1] ** 2
    went_negative = False
    for epoch in range(4):
        layer.set_training_progress(epoch)
        for _ in range(3):
            y, _ = layer(x)
            opt.zero_grad()
            ((y[:, 0] - target) ** 2).mean().backward()
            opt.step()
            went_negative |= bool((layer.encoder < 0).any() or (layer.decoder < 0).any())
            layer.after_step()
            assert bool((layer.encoder >= 0).all()) and bool((layer.decoder >= 0).all())
            torch.testing.assert_close(layer.encoder.norm(dim=1), torch.ones(30))
    assert went_negative  # the projection had something to do


@pytest.mark.parametrize("epoch, k", [(0, 100), (5, 55), (10, 10), (11, 10), (50, 10),
                                      (1, 91), (3, 73)])
def test_sdmlp_anneals_k_by_eq4(epoch, k):
    layer = SDMLP(SDMLPConfig(d_in=8, n_neurons=100, k_target=10, anneal_epochs=10))
    assert layer.current_k == 100  # before any epoch: k_max
    layer.set_training_progress(epoch)
    assert layer.current_k == layer.activated_units == k


def test_annealed_k_floors_exactly():
    # ⌊100 − 1·90/4⌋ = ⌊77.5⌋ = 77, ⌊100 − 2·90/4⌋ = 55; k_max below n_neurons
    assert [annealed_k(e, 100, 10, 4) for e in range(6)] == [100, 77, 55, 32, 10, 10]
    assert annealed_k(7, 20, 5, 0) == 5
    layer = SDMLP(SDMLPConfig(d_in=8, n_neurons=50, k_target=5, k_max=20, anneal_epochs=3))
    assert layer.current_k == 20
    with pytest.raises(ValueError, match="epoch"):
        layer.set_training_progress(-1)


def test_sdmlp_gaba_switch_excites_then_inhibits():
    cfg = SDMLPConfig(d_in=8, n_neurons=30, k_target=3, gaba_switch=True,
                      gaba_switch_activations=10)
    layer = SDMLP(cfg).double()
    layer.set_training_progress(0)
    assert layer.current_k == 3
    x = _x(8)
    _, active = layer.hidden(x)
    assert bool((active.sum(1) > 3).all())  # λ = −1: the interneuron excites
    layer(x)  # training mode: counts activations
    assert float(layer.gaba_counts.sum()) == float(active.sum())
    layer.eval()
    layer(x)  # evaluation does not count
    assert float(layer.gaba_counts.sum()) == float(active.sum())
    with torch.no_grad():
        layer.gaba_counts.fill_(10)  # every neuron switched: λ = 1, Eq. 12 is Eq. 4
    plain = SDMLP(dataclasses.replace(cfg, gaba_switch=False, anneal_epochs=0)).double()
    plain.set_training_progress(0)
    # the GABA layer runs the masked matmuls, as plain's ``hidden`` does (bit for bit); plain's
    # forward runs the winners-only kernels, equal up to the order of the sums
    torch.testing.assert_close(layer(x)[0], plain.hidden(x)[0] @ plain.decoder.T, rtol=0, atol=0)
    torch.testing.assert_close(layer(x)[0], plain(x)[0], rtol=0, atol=1e-15)


def test_sdmlp_gradients_reach_encoder_and_decoder():
    layer = SDMLP(SDMLPConfig(d_in=8, n_neurons=20, k_target=3, anneal_epochs=0))
    x = _x(32, dtype=torch.float32)
    y, _ = layer(x)
    (y[:, 0] - x[:, 0]).pow(2).mean().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and bool((p.grad != 0).any()), name


def test_sdmlp_lift_keeps_the_norm():
    x = _x(4, dtype=torch.float32)
    lifted = SDMLP(SDMLPConfig(d_in=8, n_neurons=20, k_target=3))
    plain = SDMLP(SDMLPConfig(d_in=8, n_neurons=20, k_target=3, lift_inputs=False))
    assert not torch.allclose(lifted(x)[0], lifted(2 * x)[0])
    torch.testing.assert_close(plain(x)[0], plain(2 * x)[0])
    signs = SDMLP(SDMLPConfig(d_in=8, n_neurons=20, k_target=3, split_signs=True))
    assert signs.encoder.shape == (20, 17)
    assert bool((signs.normalise_inputs(x) >= 0).all())


@pytest.mark.parametrize("field, value", [
    ("d_in", 0), ("d_out", 0), ("n_neurons", 0), ("k_target", 0), ("k_target", 101),
    ("k_max", 5), ("k_max", 101), ("anneal_epochs", -1), ("gaba_switch_activations", 0),
    ("gaba_switch", "yes"), ("lift_inputs", 1), ("split_signs", None), ("nonneg_decoder", 0),
    ("optimizer", "adamw"), ("lr", -1.0), ("seed", 1.5),
])
def test_sdmlp_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        SDMLPConfig(**{"d_in": 8, "n_neurons": 100, "k_target": 10, field: value})


def test_sdmlp_rejects_wrong_input_shape():
    with pytest.raises(ValueError, match=r"\(B, 8\)"):
        SDMLP(SDMLPConfig(d_in=8, n_neurons=20, k_target=2))(torch.zeros(3))


def test_sdmlp_seeded_and_sized():
    cfg = SDMLPConfig(d_in=8, n_neurons=20, k_target=2, anneal_epochs=0)
    x = _x(4, dtype=torch.float32)
    assert torch.equal(SDMLP(cfg)(x)[0], SDMLP(cfg)(x)[0])
    assert not torch.equal(SDMLP(cfg)(x)[0], SDMLP(dataclasses.replace(cfg, seed=1))(x)[0])
    layer = SDMLP(cfg)
    assert (layer.total_units, layer.n_units, layer.activated_units) == (20, 20, 2)
    assert layer.flops_per_example() == 2 * (9 * 20 + 2 * 1)


def test_sdmlp_state_dict_round_trip_keeps_usage_k_and_counts():
    cfg = SDMLPConfig(d_in=8, n_neurons=20, k_target=2, anneal_epochs=4)
    layer = SDMLP(cfg)
    layer.set_training_progress(2)
    layer(_x(6, dtype=torch.float32))
    copy = SDMLP(dataclasses.replace(cfg, seed=7))
    copy.load_state_dict(layer.state_dict())
    assert copy.current_k == layer.current_k == 11
    assert torch.equal(copy.unit_usage, layer.unit_usage)
    assert float(copy.examples_seen) == 6
    assert "gaba_counts" in copy.state_dict()


# -- devices --------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("make", [
    lambda: SMEAR(SMEARConfig(d_in=8, n_experts=6, expert_size=16, d_out=2)),
    lambda: SDMLP(SDMLPConfig(d_in=8, n_neurons=64, k_target=5, anneal_epochs=0)),
])
def test_cpu_and_cuda_agree(make):
    cpu, gpu = make().double(), make().double().cuda()
    x = _x(32)
    y_cpu, _ = cpu(x)
    y_gpu, _ = gpu(x.cuda())
    torch.testing.assert_close(y_gpu.cpu(), y_cpu, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(gpu.unit_usage.cpu(), cpu.unit_usage, rtol=1e-10, atol=1e-12)
    y_gpu.sum().backward()
    y_cpu.sum().backward()
    for (name, p), q in zip(cpu.named_parameters(), gpu.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, rtol=1e-9, atol=1e-12, msg=name)


@pytest.mark.parametrize("k", [0, 65, 2.5, "8"])
def test_sdmlp_extra_state_names_current_k(k):
    layer = SDMLP(SDMLPConfig(d_in=2, n_neurons=64, k_target=4))
    with pytest.raises(ValueError, match="current_k"):
        layer.set_extra_state({"current_k": k})
    layer.set_extra_state({"current_k": 8})
    assert layer.current_k == 8


def test_gaba_switch_fully_on_trains_exactly_k_neurons():
    """Bricken et al. 2023, Eq. 12 with λ = 1 for every neuron: a* = [a − I]_+ with I the
    (k+1)-th activation. The (k+1)-th neuron outputs exactly 0 and must not learn."""
    k, n = 3, 16
    layer = SDMLP(SDMLPConfig(d_in=4, n_neurons=n, k_target=k, gaba_switch=True,
                              gaba_switch_activations=1)).double()
    layer.gaba_counts.fill_(10.0)  # every neuron fully inhibited: λ_i = 1
    x = torch.rand(1, 4, dtype=torch.float64) + 0.1  # positive: every activation > 0
    y, _ = layer(x)
    y.sum().backward()
    learning = int((layer.encoder.grad.abs().sum(dim=1) > 0).sum())
    assert learning == k  # was k + 1: clamp(min=0) passes gradient at exactly 0
    h, active = layer.hidden(x)
    assert int(active.sum()) == k and int((h > 0).sum()) == k
