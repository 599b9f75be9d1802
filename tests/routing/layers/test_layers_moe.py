"""σ-MoE, top-k MoE and PKM layers against slow loop references (Csordás et al. 2023 §3.2, §4,
§5), plus selection, auxiliary losses, expert dropout, gradients, usage, configs and CUDA."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch

from routing.layers._experts import ExpertBank, topk_lowest_index
from routing.layers.pkm import PKM, PKMConfig
from routing.layers.sigma_moe import SigmaMoE, SigmaMoEConfig
from routing.layers.topk_moe import TopKMoE, TopKMoEConfig

D_IN, D_OUT = 5, 3  # odd d_in and d_in != d_out on purpose


def _x(batch=64, d=D_IN, seed=1, dtype=torch.float64):
    return torch.randn(batch, d, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _sigma(**kw):
    kw = {"d_in": D_IN, "d_out": D_OUT, "n_experts": 6, "expert_size": 4, "k": 2, **kw}
    return SigmaMoE(SigmaMoEConfig(**kw)).double()


def _topk(**kw):
    kw = {"d_in": D_IN, "d_out": D_OUT, "n_experts": 6, "expert_size": 4, "k": 2, **kw}
    return TopKMoE(TopKMoEConfig(**kw)).double()


def _pkm(**kw):
    # D_IN is odd: these layers project the query (the default, q = x, needs an even d_in)
    kw = {"d_in": D_IN, "d_out": D_OUT, "n_keys": 5, "d_key": 4, "k": 3, "project_query": True,
          **kw}
    return PKM(PKMConfig(**kw)).double()


LAYERS = {"sigma_moe": _sigma, "topk_moe": _topk, "pkm": _pkm}


# -- slow references: explicit loops over examples and experts (or value slots) ------------
def _expert_out(x_b, W1, W2, e):
    return torch.relu(x_b @ W1[e]) @ W2[e]


def _best(scores, k):
    """Indices of the k largest of a list of floats, ties to the lowest index."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]


@torch.no_grad()
def ref_bank(x, W1, W2, idx, gate):
    y = torch.zeros(len(x), W2.shape[2], dtype=x.dtype)
    for b in range(len(x)):
        for j in range(idx.shape[1]):
            y[b] += gate[b, j] * _expert_out(x[b], W1, W2, int(idx[b, j]))
    return y


@torch.no_grad()
def ref_sigma(layer, x, keep=None):
    W1, W2, W3 = layer.experts.W1, layer.experts.W2, layer.router
    y = torch.zeros(len(x), layer.config.d_out, dtype=x.dtype)
    for b in range(len(x)):
        logit = [float(W3[e] @ x[b]) for e in range(layer.config.n_experts)]
        if keep is not None:
            logit = [v if keep[b, e] else -math.inf for e, v in enumerate(logit)]
        for e in _best(logit, layer.config.k):
            s = 1 / (1 + math.exp(-float(W3[e] @ x[b])))
            if keep is None or keep[b, e]:
                y[b] += s * _expert_out(x[b], W1, W2, e)
    return y


@torch.no_grad()
def ref_entropy(layer, x):
    E = layer.config.n_experts
    p = [0.0] * E
    for b in range(len(x)):
        logit = [float(layer.router[e] @ x[b]) for e in range(E)]
        z = sum(math.exp(v) for v in logit)
        for e in range(E):
            p[e] += math.exp(logit[e]) / z / len(x)
    return layer.config.entropy_coef * sum(pe * math.log(pe) for pe in p)


@torch.no_grad()
def ref_topk(layer, x):
    W1, W2, W3, E = layer.experts.W1, layer.experts.W2, layer.router, layer.config.n_experts
    y = torch.zeros(len(x), layer.config.d_out, dtype=x.dtype)
    f, P = [0.0] * E, [0.0] * E
    for b in range(len(x)):
        logit = [float(W3[e] @ x[b]) for e in range(E)]
        z = sum(math.exp(v) for v in logit)
        prob = [math.exp(v) / z for v in logit]
        chosen = _best(prob, layer.config.k)
        norm = sum(prob[e] for e in chosen) if layer.config.renormalize else 1.0
        for e in chosen:
            y[b] += prob[e] / norm * _expert_out(x[b], W1, W2, e)
            f[e] += 1 / (len(x) * layer.config.k)
        for e in range(E):
            P[e] += prob[e] / len(x)
    return y, layer.config.load_balance_coef * E * sum(fe * pe for fe, pe in zip(f, P))


@torch.no_grad()
def ref_pkm(layer, x):
    c = layer.config
    n, h = c.n_keys, c.d_key // 2
    y = torch.zeros(len(x), c.d_out, dtype=x.dtype)
    for b in range(len(x)):
        q = layer.query @ x[b] if layer.query is not None else x[b]
        u_a = [float(layer.keys[0, i] @ q[:h]) for i in range(n)]
        u_b = [float(layer.keys[1, i] @ q[h:]) for i in range(n)]
        u = [u_b[i // n] + u_a[i % n] for i in range(n * n)]  # all n² slots, Eq. 8
        top = _best(u, c.k)
        if c.activation == "relu":
            w = [max(u[i], 0.0) for i in top]
        else:
            z = sum(math.exp(u[i]) for i in top)
            w = [math.exp(u[i]) / z for i in top]
        for wi, i in zip(w, top):
            y[b] += wi * layer.values[i]
    return y


# -- agreement with the references ----------------------------------------------------------
@pytest.mark.parametrize("batch,K", [(0, 2), (1, 1), (40, 3)])
def test_expert_bank_matches_loop(batch, K):
    bank = ExpertBank(5, D_IN, 4, D_OUT).double()
    g = torch.Generator().manual_seed(0)
    bank.reset_parameters("standard", g)
    x = _x(batch)
    idx = torch.randint(0, 5, (batch, K), generator=g)  # repeats within a row allowed
    gate = torch.rand(batch, K, generator=g, dtype=torch.float64)
    torch.testing.assert_close(bank(x, idx, gate), ref_bank(x, bank.W1, bank.W2, idx, gate))


@pytest.mark.parametrize("kw", [{}, {"k": 1}, {"k": 6, "init": "switch"}])
@torch.no_grad()
def test_sigma_moe_matches_loop(kw):
    layer, x = _sigma(**kw).eval(), _x()
    y, aux = layer(x)
    torch.testing.assert_close(y, ref_sigma(layer, x))
    assert float(aux["entropy"]) == pytest.approx(ref_entropy(layer, x), rel=1e-9)


@pytest.mark.parametrize("kw", [{}, {"k": 1}, {"k": 3, "renormalize": True},
                                {"init": "sigma_moe"}])
@torch.no_grad()
def test_topk_moe_matches_loop(kw):
    layer, x = _topk(**kw), _x()
    y, aux = layer(x)
    y_ref, balance_ref = ref_topk(layer, x)
    torch.testing.assert_close(y, y_ref)
    assert float(aux["load_balance"]) == pytest.approx(balance_ref, rel=1e-9)


@pytest.mark.parametrize("kw", [{}, {"activation": "softmax", "init": "lample"}, {"k": 7},
                                {"k": 25, "init": "lample"},
                                {"k": 10, "n_keys": 12, "d_key": 6},
                                {"d_in": 4, "project_query": False}])
@torch.no_grad()
def test_pkm_matches_full_score_loop(kw):
    layer = _pkm(**kw)
    x = _x(d=layer.config.d_in)
    y, aux = layer(x)
    torch.testing.assert_close(y, ref_pkm(layer, x))
    assert aux == {}


# -- selection --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", LAYERS)
def test_route_gives_exactly_k_distinct_winners(name):
    layer = LAYERS[name]()
    idx, gate = layer.route(_x(100))
    k = layer.config.k
    assert idx.shape == gate.shape == (100, k) and idx.dtype == torch.int64
    assert all(len(set(row.tolist())) == k for row in idx)
    assert int(idx.min()) >= 0 and int(idx.max()) < layer.n_units


def test_ties_go_to_the_lowest_index():
    values, idx = topk_lowest_index(torch.tensor([[1.0, 3.0, 3.0, 1.0, 3.0]]), 4)
    assert idx.tolist() == [[1, 2, 4, 0]] and values.tolist() == [[3.0, 3.0, 3.0, 1.0]]
    layer = _sigma(k=3)
    with torch.no_grad():
        layer.router.zero_()  # every score σ(0): a six-way tie
    assert layer.route(_x(4))[0].tolist() == [[0, 1, 2]] * 4


# -- auxiliary losses -------------------------------------------------------------------------
@torch.no_grad()
def test_load_balance_is_larger_for_imbalanced_routing():
    E = 2 * D_IN
    balanced, skewed = _topk(n_experts=E, k=1), _topk(n_experts=E, k=1)
    eye = torch.eye(D_IN, dtype=torch.float64)
    balanced.router.copy_(3 * torch.cat([eye, -eye]))  # expert = sign and axis of max |x_j|
    skewed.router.zero_()
    skewed.router[0, 0] = 10.0                          # x_0 > 0 sends everything to 0
    x = _x(4096)
    _, bal = balanced(x)
    x[:, 0] = x[:, 0].abs()
    _, skew = skewed(x)
    coef = balanced.config.load_balance_coef
    assert float(bal["load_balance"]) / coef == pytest.approx(1.0, abs=0.15)
    assert float(skew["load_balance"]) / coef > E / 2
    assert torch.bincount(skewed.route(x)[0].flatten()).tolist() == [4096]


@torch.no_grad()
def test_load_balance_is_one_for_a_uniform_router():
    layer = _topk(k=3, load_balance_coef=1.0)
    layer.router.zero_()
    assert float(layer(_x())[1]["load_balance"]) == pytest.approx(1.0)


@torch.no_grad()
def test_entropy_loss_is_minimal_for_uniform_and_zero_for_collapsed_selection():
    layer = _sigma(entropy_coef=0.5)
    layer.router.zero_()
    assert float(layer(_x())[1]["entropy"]) == pytest.approx(-0.5 * math.log(6))
    layer.router[0, 0] = 1e3
    x = _x()
    x[:, 0] = x[:, 0].abs() + 0.1
    assert float(layer(x)[1]["entropy"]) == pytest.approx(0.0, abs=1e-12)


def test_entropy_gradient_spreads_the_selection():
    layer, x = _sigma(entropy_coef=1.0), _x()
    before = layer(x)[1]["entropy"]
    before.backward()
    with torch.no_grad():
        layer.router -= 0.5 * layer.router.grad
    assert float(layer(x)[1]["entropy"].detach()) < float(before.detach())


@torch.no_grad()
def test_entropy_uses_router_logits_before_dropout():
    layer, x = _sigma(expert_dropout=0.5), _x()
    trained = layer.train()(x)[1]["entropy"]  # the torch path (dropout draws masks)
    # eval: the fused CPU kernel, the same sums in another order
    assert float(trained) == pytest.approx(float(layer.eval()(x)[1]["entropy"]), rel=1e-12)


@pytest.mark.parametrize("dtype,big,atol", [(torch.float32, 200.0, 2e-6),
                                             (torch.float64, 1000.0, 1e-12)])
def test_entropy_gradient_is_finite_and_equal_on_both_paths_for_a_saturated_router(dtype, big,
                                                                                   atol):
    """A saturated router (logit gaps of 200 in float32, 1000 in float64) makes entries of
    the batch-mean softmax p exactly 0. The torch path (training with expert dropout, CUDA)
    must then give the fused kernel's finite loss and gradients: d(p log p)/dp = log p + 1,
    log 0 taken as 0 (``xlogy(p, p)``'s backward is 0/0 there). atol: dx sums big · dlogit
    terms that cancel."""
    layer = _sigma(entropy_coef=1.0).to(dtype).eval()
    with torch.no_grad():
        layer.router.zero_()
        layer.router[0, 0], layer.router[3, 0] = big, -big
        # expert 1 shares the lead, by an x-dependent margin: a nonzero router gradient
        layer.router[1, 0], layer.router[1, 1] = big, 1.0
    x = _x(32, dtype=dtype)
    x[:, 0] = x[:, 0].abs() + 1                                  # logit 0 >= big, 3 <= -big
    p = torch.softmax(x @ layer.router.T, dim=1).mean(0)
    assert bool((p == 0).any())  # the regime of the bug
    xlogy_grad = torch.autograd.grad(torch.special.xlogy(p.requires_grad_(), p).sum(), p)[0]
    assert not bool(torch.isfinite(xlogy_grad).all())             # what the torch path did
    grads, losses = [], []
    for forward in (layer._forward_torch, layer.forward):         # torch path, fused kernel
        layer.zero_grad()
        xi = x.clone().requires_grad_()
        loss = forward(xi)[1]["entropy"]
        loss.backward()
        losses.append(loss.detach())
        grads.append([xi.grad, layer.router.grad])
    assert all(bool(torch.isfinite(g).all()) for g in grads[0] + grads[1])
    torch.testing.assert_close(losses[0], losses[1])
    for got, want in zip(grads[0], grads[1]):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=atol)
    assert bool(layer.router.grad.ne(0).any())  # not vacuous: the router does get a gradient


# -- expert dropout ---------------------------------------------------------------------------
def test_expert_dropout_only_in_training_mode():
    plain, dropped, x = _sigma().eval(), _sigma(expert_dropout=0.5), _x()
    dropped.eval()
    assert torch.equal(plain.route(x)[0], dropped.route(x)[0])
    torch.testing.assert_close(plain(x)[0], dropped(x)[0], rtol=0, atol=0)
    dropped.train()
    assert not torch.equal(plain.route(x)[0], dropped.route(x)[0])


def test_expert_dropout_matches_loop_reference_with_the_same_mask():
    layer, x = _sigma(expert_dropout=0.6), _x()
    state = layer.generator.get_state()
    y = layer.train()(x)[0]
    keep = torch.rand(64, 6, generator=torch.Generator().set_state(state)) >= 0.6
    torch.testing.assert_close(y.detach(), ref_sigma(layer, x, keep))
    assert bool((~keep).sum(1).gt(6 - 2).any())  # some rows had fewer than K survivors


def test_usage_with_expert_dropout_counts_only_the_kept_selected_experts():
    """Eq. 22: a dropped expert that fills a top-K slot (fewer than K survived) has gate 0 and
    is not selected, so it is not counted. Counted independently twice: from the dropout mask
    and a loop selection, and from ``route``'s gates (a kept expert's σ gate is > 0)."""
    layer, x = _sigma(expert_dropout=0.6).train(), _x()
    state = layer.generator.get_state()
    layer(x)
    keep = torch.rand(64, 6, generator=torch.Generator().set_state(state)) >= 0.6
    expected = torch.zeros(6, dtype=torch.float64)
    with torch.no_grad():
        for b in range(64):
            logit = [float(layer.router[e] @ x[b]) if keep[b, e] else -math.inf
                     for e in range(6)]
            for e in _best(logit, 2):
                expected[e] += float(keep[b, e])
    assert torch.equal(layer.unit_usage, expected)
    assert float(layer.examples_seen) == 64
    assert float(expected.sum()) < 64 * 2  # fillers were drawn, and not counted
    layer.generator.set_state(state)
    idx, gate = layer.route(x)  # the same masks again
    assert bool((gate > 0).eq(keep.gather(1, idx)).all())
    assert torch.equal(torch.bincount(idx[gate > 0], minlength=6).double(), expected)


def test_expert_dropout_is_deterministic_given_the_seed():
    a, b, c = (_sigma(expert_dropout=0.3, seed=seed) for seed in (0, 0, 1))
    x = _x()
    for _ in range(2):  # the sequence of masks, not only the first, repeats
        idx_a, idx_b = a.route(x)[0], b.route(x)[0]
        assert torch.equal(idx_a, idx_b)
        torch.testing.assert_close(a(x)[0], b(x)[0], rtol=0, atol=0)
    assert not torch.equal(a.route(x)[0], c.route(x)[0])


# -- gradients --------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kw", [("sigma_moe", {}), ("sigma_moe", {"expert_dropout": 0.3}),
                                     ("topk_moe", {"k": 1, "load_balance_coef": 0.0}),
                                     ("topk_moe", {"renormalize": True}),
                                     ("pkm", {}),
                                     ("pkm", {"activation": "softmax", "init": "lample"})])
def test_gradients_reach_every_parameter(name, kw):
    layer = LAYERS[name](**kw)
    y, aux = layer(_x(256))
    (y.square().sum() + sum(aux.values(), torch.zeros(()))).backward()
    params = dict(layer.named_parameters())
    assert set(params) >= ({"query", "keys", "values"} if name == "pkm"
                           else {"router", "experts.W1", "experts.W2"})
    for pname, p in params.items():
        assert p.grad is not None and bool(p.grad.ne(0).any()), pname
    if name != "pkm":  # every expert is selected somewhere in 256 examples, so every learns
        assert bool(layer.experts.W1.grad.flatten(1).ne(0).any(1).all())
    else:
        assert bool(layer.keys.grad.flatten(1).ne(0).any(1).all())  # both halves


def test_renormalised_top1_gate_gives_the_router_no_task_gradient():
    # why the softmax comes before top-k and renormalisation is off by default
    layer = _topk(k=1, renormalize=True, load_balance_coef=0.0)
    y, aux = layer(_x())
    (y.square().sum() + aux["load_balance"]).backward()
    assert float(layer.router.grad.abs().max()) < 1e-12  # p / p: zero up to rounding


# -- usage, state, sizes ----------------------------------------------------------------------
def test_pkm_default_splits_x_into_two_halves_without_a_projection():
    """Csordás et al. App. A.3: "we directly divide the input vectors into two sub-keys
    without an additional projection" -- the default; q = W_q x is the option."""
    config = PKMConfig(d_in=6, d_out=2, n_keys=4, k=5)
    assert (config.project_query, config.d_key) == (False, 6)
    layer = PKM(config).double()
    assert layer.query is None
    assert set(dict(layer.named_parameters())) == {"keys", "values"}
    x = _x(30, d=6)
    torch.testing.assert_close(layer(x)[0], ref_pkm(layer, x))  # ref_pkm: q = x
    assert layer.flops_per_example() == 2 * 6 * 4 + layer._rank_a.numel() + 2 * 5 * 2
    projected = PKMConfig(d_in=5, n_keys=4, k=5, project_query=True, d_key=4)
    assert PKM(projected).query.shape == (4, 5)
    assert PKMConfig(d_in=6, project_query=True).d_key == 6  # None means d_in either way


def test_pkm_odd_d_in_without_projection_suggests_projecting():
    with pytest.raises(ValueError, match=r"^d_in must be even .*got 7; set project_query=True"):
        PKMConfig(d_in=7)


@pytest.mark.parametrize("name", LAYERS)
def test_usage_counts_exactly_k_per_example(name):
    layer = LAYERS[name]().eval()
    x = _x(50)
    layer(x)
    layer(x[:20])
    k = layer.config.k
    assert float(layer.examples_seen) == 70
    assert float(layer.unit_usage.sum()) == 70 * k
    expected = (torch.bincount(layer.route(x)[0].flatten(), minlength=layer.n_units)
                + torch.bincount(layer.route(x[:20])[0].flatten(), minlength=layer.n_units))
    assert torch.equal(layer.unit_usage, expected.double())


@pytest.mark.parametrize("name", LAYERS)
def test_usage_is_counted_after_a_dtype_change(name):
    """``layer.float()`` leaves the usage buffer float64 (``RouterLayer._apply``), and
    counting goes on in it (a float32 buffer once met float64 counts in ``index_add_``)."""
    layer = LAYERS[name]().float().eval()
    layer(_x(10, dtype=torch.float32))
    assert layer.unit_usage.dtype == torch.float64
    assert float(layer.unit_usage.sum()) == 10 * layer.config.k


@pytest.mark.parametrize("name", LAYERS)
def test_state_dict_round_trip_keeps_parameters_and_usage(name):
    layer, x = LAYERS[name](), _x()
    layer(x)
    clone = LAYERS[name](seed=7)
    clone.load_state_dict(layer.state_dict())
    assert torch.equal(clone.unit_usage, layer.unit_usage)
    assert float(clone.examples_seen) == 64
    torch.testing.assert_close(clone.eval()(x)[0], layer.eval()(x)[0], rtol=0, atol=0)


@pytest.mark.parametrize("name", LAYERS)
@torch.no_grad()
def test_empty_batch(name):
    layer = LAYERS[name]()
    y, aux = layer(_x(0))
    assert y.shape == (0, D_OUT)
    assert all(float(v) == 0.0 for v in aux.values())


def test_sizes_and_flops():
    s, t, p = _sigma(), _topk(k=1), _pkm()
    assert (s.activated_units, s.total_units, s.n_units) == (8, 24, 6)
    assert (t.activated_units, t.total_units) == (4, 24)
    assert (p.activated_units, p.total_units, p.n_units) == (3, 25, 25)
    assert s.flops_per_example() == 2 * D_IN * 6 + 2 * 2 * 4 * (D_IN + D_OUT)
    # rank pairs (i+1)(j+1) <= 3 of the two halves: (0,0), (0,1), (1,0), (0,2), (2,0)
    assert p.flops_per_example() == 2 * D_IN * 4 + 2 * 4 * 5 + 5 + 2 * 3 * D_OUT
    assert s.describe()["router"] == "sigma_moe" and p.describe()["params"] == 20 + 20 + 75


@torch.no_grad()
def test_sigma_moe_init_follows_section_5():
    layer = SigmaMoE(SigmaMoEConfig(d_in=64, n_experts=32, expert_size=64))
    norms = layer.router.norm(dim=1)
    torch.testing.assert_close(norms, torch.full_like(norms, math.sqrt(2)))  # equal rows
    assert float(layer.experts.W1.std()) == pytest.approx(math.sqrt(2 / 64), rel=0.05)
    assert float(layer.experts.W2.std()) == pytest.approx(math.sqrt(2 / (32 * 64)), rel=0.05)


# -- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,kw,param", [
    (SigmaMoEConfig, {"d_in": 0}, "d_in"),
    (SigmaMoEConfig, {"d_in": 8, "d_out": 0}, "d_out"),
    (SigmaMoEConfig, {"d_in": 8, "n_experts": 0}, "n_experts"),
    (SigmaMoEConfig, {"d_in": 8, "expert_size": 2.5}, "expert_size"),
    (SigmaMoEConfig, {"d_in": 8, "n_experts": 4, "k": 5}, "k"),
    (SigmaMoEConfig, {"d_in": 8, "entropy_coef": -1.0}, "entropy_coef"),
    (SigmaMoEConfig, {"d_in": 8, "expert_dropout": 1.0}, "expert_dropout"),
    (SigmaMoEConfig, {"d_in": 8, "init": "xavier"}, "init"),
    (SigmaMoEConfig, {"d_in": 8, "optimizer": "rmsprop"}, "optimizer"),
    (SigmaMoEConfig, {"d_in": 8, "lr": 0.0}, "lr"),
    (SigmaMoEConfig, {"d_in": 8, "seed": -1}, "seed"),
    (TopKMoEConfig, {"d_in": 8, "k": 0}, "k"),
    (TopKMoEConfig, {"d_in": 8, "renormalize": 1}, "renormalize"),
    (TopKMoEConfig, {"d_in": 8, "load_balance_coef": float("nan")}, "load_balance_coef"),
    (TopKMoEConfig, {"d_in": 8, "init": "he"}, "init"),
    (PKMConfig, {"d_in": 8, "d_key": 7}, "d_key"),
    (PKMConfig, {"d_in": 8, "n_keys": 3, "k": 10}, "k"),
    (PKMConfig, {"d_in": 8, "n_keys": 0}, "n_keys"),
    (PKMConfig, {"d_in": 8, "activation": "gelu"}, "activation"),
    (PKMConfig, {"d_in": 8, "init": "sigma_moe"}, "init"),
    (PKMConfig, {"d_in": 5, "d_key": 4, "project_query": False}, "d_key"),
    (PKMConfig, {"d_in": 5}, "d_in"),
    (PKMConfig, {"d_in": 1}, "d_in"),
    (PKMConfig, {"d_in": 5, "project_query": True}, "d_key"),  # d_key None: d_in, odd
    (PKMConfig, {"d_in": 8, "project_query": 0}, "project_query"),
])
def test_bad_config_raises_naming_the_parameter(cls, kw, param):
    with pytest.raises(ValueError, match=rf"^{param} must"):
        cls(**kw)


@pytest.mark.parametrize("name", LAYERS)
def test_bad_input_raises(name):
    layer = LAYERS[name]()
    for bad in (_x(4, d=D_IN + 1), _x(4)[0], torch.zeros(4, D_IN, dtype=torch.int64)):
        with pytest.raises(ValueError, match="x must"):
            layer(bad)


# -- CUDA -------------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("name,kw", [("sigma_moe", {"expert_dropout": 0.3}), ("topk_moe", {}),
                                     ("pkm", {})])
def test_cuda_agrees_with_cpu(name, kw):
    cpu, gpu = LAYERS[name](**kw), LAYERS[name](**kw).cuda()
    x = _x(512)
    for _ in range(2):  # train mode: same dropout masks on both devices
        y_c, aux_c = cpu(x)
        y_g, aux_g = gpu(x.cuda())
        torch.testing.assert_close(y_g.cpu(), y_c)
        for key in aux_c:
            torch.testing.assert_close(aux_g[key].cpu(), aux_c[key])
        (y_c.square().sum() + sum(aux_c.values(), torch.zeros(()))).backward()
        (y_g.square().sum() + sum(aux_g.values(), torch.zeros((), device="cuda"))).backward()
    for (pname, p_c), p_g in zip(cpu.named_parameters(), gpu.parameters()):
        torch.testing.assert_close(p_g.grad.cpu(), p_c.grad, msg=pname)
    torch.testing.assert_close(gpu.unit_usage.cpu(), cpu.unit_usage)
    cpu.eval(), gpu.eval()
    assert torch.equal(gpu.route(x.cuda())[0].cpu(), cpu.route(x)[0])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(0, 10_000), st.sampled_from([3, 1000]))
def test_fast_topk_equals_the_stable_sort_reference(rows, n, seed, levels):
    """Few distinct levels make ties (within the top k and at its boundary) common."""
    from routing.layers._experts import _topk_lowest_index_sort, topk_lowest_index

    gen = torch.Generator().manual_seed(seed)
    scores = torch.randint(0, levels, (rows, n), generator=gen).float()
    scores[0, 0] = float("nan") if n > 1 and seed % 3 == 0 else scores[0, 0]
    for k in {1, max(1, n // 2), n}:
        values, idx = topk_lowest_index(scores, k)
        ref_values, ref_idx = _topk_lowest_index_sort(scores, k)
        assert torch.equal(idx, ref_idx)
        torch.testing.assert_close(values, ref_values, equal_nan=True)


def test_pkm_dense_small_keys_is_the_reference_dense_read():
    """Csordás et al.'s code (no_knn when n_keys <= knn): y = Σ over all n² slots of
    relu(u_b[i // n] + u_a[i mod n]) · v_i; the default keeps the top k of n² slots."""
    n, k = 4, 5
    x = torch.randn(6, 8, dtype=torch.float64)
    dense = PKM(PKMConfig(d_in=8, n_keys=n, k=k, dense_small_keys=True)).double()
    u = torch.einsum("bhd,hnd->bhn", x.reshape(6, 2, 4), dense.keys)
    expected = torch.zeros(6, 1, dtype=torch.float64)
    for i in range(n * n):
        expected += torch.relu(u[:, 1, i // n] + u[:, 0, i % n])[:, None] * dense.values[i]
    torch.testing.assert_close(dense(x)[0], expected)
    assert dense.activated_units == n * n
    sparse = PKM(PKMConfig(d_in=8, n_keys=n, k=k)).double()  # default unchanged: top k
    assert sparse.activated_units == k
    assert not torch.allclose(sparse(x)[0], expected)
    big = PKM(PKMConfig(d_in=8, n_keys=8, k=5, dense_small_keys=True))  # n_keys > k: sparse
    assert not big.dense and big.activated_units == 5
