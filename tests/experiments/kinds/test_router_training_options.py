"""``experiments.kinds.router_training``'s optimiser options against a hand-written update.

The independent computation is the update rule itself: the gradient of the same loss on the
same minibatch (drawn from ``train_router``'s generator exactly as it draws it), then
p ← p − lr·g (plain SGD, Bricken et al. 2023 §4: no momentum, whose stale state hurts SDM in
continual learning), the gradient clipped first when asked, then the layer's own
``after_step`` projection applied to a copy. Two steps, because SGD with momentum makes the
same first step as plain SGD (its buffer starts at the first gradient).
"""

import copy
import math

import pytest
import torch

from experiments.kinds.router_training import (
    LAYER_GRAD_CLIP,
    RouterRegressor,
    RouterTraining,
    train_router,
)
from routing.layers.comet import COMET, COMETConfig
from routing.layers.sdmlp import SDMLP, SDMLPConfig

LR = 0.05


def _data(n: int, d: int, seed: int = 0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    X = (2 * torch.rand(n, d, generator=gen) - 1).to(dtype)
    y = torch.sin(3 * X[:, 0]) + X[:, 1] * X[:, -1]
    return X, y


def _sdmlp(**kw) -> SDMLP:
    cfg = dict(d_in=4, n_neurons=12, k_target=3, anneal_epochs=0, seed=2)
    return SDMLP(SDMLPConfig(**{**cfg, **kw})).double()


# k annealed from n_neurons = 100 (every neuron active in epoch 0, both steps): the large
# gradients for which the authors' code clips
EARLY_ANNEALING = dict(n_neurons=100, k_target=10, anneal_epochs=5)


def _standardised(y: torch.Tensor) -> torch.Tensor:
    """train_router's targets: (y − ȳ)/s_y in float64, as it computes them."""
    y64 = y.to(torch.float64)
    mean = torch.tensor(float(y64.mean()), dtype=torch.float64)
    std = torch.tensor(max(float(y64.std(unbiased=False)), 1e-12), dtype=torch.float64)
    return ((y64 - mean) / std).to(y.dtype)


def _reference_sgd(layer, X, y, steps, batch_size, seed, clip=None):
    """``steps`` plain SGD steps by hand on a copy of ``layer``: the batches of
    ``train_router`` (its seeded ``randperm`` per epoch), the MSE on standardised targets,
    p ← p − lr·g with g scaled by min(1, clip/(‖g‖ + 1e-6)) if ``clip``, then ``after_step``.
    Returns the copy and the unclipped gradient norm of each step."""
    ref = copy.deepcopy(layer)
    ref.train()
    z = _standardised(y)
    n = len(X)
    gen = torch.Generator().manual_seed(seed)
    pos, epoch, norms = n, -1, []
    for _ in range(steps):
        if pos + batch_size > n:
            epoch += 1
            ref.set_training_progress(epoch)
            order = torch.randperm(n, generator=gen)
            pos = 0
        batch = order[pos:pos + batch_size]
        pos += batch_size
        params = [p for p in ref.parameters() if p.requires_grad]
        pred = ref(X[batch])[0][:, 0]
        loss = ((pred - z[batch]) ** 2).mean()
        grads = torch.autograd.grad(loss, params)
        norm = math.sqrt(sum(float((g * g).sum()) for g in grads))
        norms.append(norm)
        scale = min(1.0, clip / (norm + 1e-6)) if clip is not None else 1.0
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.add_(g * scale if scale != 1.0 else g, alpha=-LR)
        ref.after_step()
    return ref, norms


def _assert_same_parameters(a, b, exact=True):
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        if exact:
            assert torch.equal(p, q), name
        else:
            torch.testing.assert_close(p, q, rtol=1e-12, atol=1e-14, msg=name)


# -- grad_clip ------------------------------------------------------------------------------
def test_grad_clip_default_means_the_layer_default():
    assert RouterTraining().grad_clip == LAYER_GRAD_CLIP == "layer"
    assert RouterTraining().clip_for(_sdmlp()) == 1.0  # the authors' code
    comet = COMET(COMETConfig(d_in=4, widths=(8,), p_k=0.5))
    assert RouterTraining().clip_for(comet) is None
    assert RouterTraining(grad_clip=None).clip_for(_sdmlp()) is None
    assert RouterTraining(grad_clip=0.25).clip_for(_sdmlp()) == 0.25


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), float("inf"), "none", "Layer",
                                   True, [1.0]])
def test_bad_grad_clip_raises_naming_it(value):
    with pytest.raises(ValueError, match="grad_clip"):
        RouterTraining(grad_clip=value)


def test_sdmlp_default_clips_the_gradient_norm_at_one():
    X, y = _data(48, 4)
    layer = _sdmlp(**EARLY_ANNEALING)
    start = copy.deepcopy(layer)
    report = train_router(RouterRegressor(layer), X, y,
                          RouterTraining(steps=2, batch_size=24, lr=LR, schedule="constant"),
                          seed=7)
    assert report.grad_clip == 1.0 and report.optimizer == "sgd"
    clipped, norms = _reference_sgd(start, X, y, steps=2, batch_size=24, seed=7, clip=1.0)
    unclipped, _ = _reference_sgd(start, X, y, steps=2, batch_size=24, seed=7)
    assert min(norms) > 1.5  # clipping has work to do, so the two references differ
    _assert_same_parameters(layer, clipped, exact=False)
    with pytest.raises(AssertionError):
        _assert_same_parameters(layer, unclipped, exact=False)


def test_grad_clip_none_does_not_clip():
    X, y = _data(48, 4)
    layer = _sdmlp(**EARLY_ANNEALING)
    start = copy.deepcopy(layer)
    report = train_router(RouterRegressor(layer), X, y,
                          RouterTraining(steps=2, batch_size=24, lr=LR, schedule="constant",
                                         grad_clip=None), seed=7)
    assert report.grad_clip is None
    expected, norms = _reference_sgd(start, X, y, steps=2, batch_size=24, seed=7)
    assert min(norms) > 1.5  # a clip at 1 would have changed the steps
    _assert_same_parameters(layer, expected, exact=True)


def test_explicit_grad_clip_bounds_the_step_of_a_layer_without_default():
    """COMET has no default clip and no projection: one SGD step with grad_clip = c moves the
    parameters by lr·c·‖g‖/(‖g‖ + 1e-6) in L2 norm, along −g."""
    X, y = _data(64, 4, dtype=torch.float32)
    layer = COMET(COMETConfig(d_in=4, widths=(16,), p_k=0.25, seed=1))
    start = [p.detach().clone() for p in layer.parameters()]
    clip = 1e-3
    report = train_router(RouterRegressor(layer), X, y,
                          RouterTraining(steps=1, batch_size=64, lr=LR, optimizer="sgd",
                                         schedule="constant", grad_clip=clip))
    assert report.grad_clip == clip
    moved = math.sqrt(sum(float(((p.detach() - q) ** 2).sum())
                          for p, q in zip(layer.parameters(), start)))
    assert moved == pytest.approx(LR * clip, rel=1e-3)


# -- plain SGD by default for SDMLP (Bricken et al. 2023 §4) --------------------------------
def test_sdmlp_default_optimizer_is_sgd():
    assert SDMLPConfig(d_in=3).optimizer == "sgd"


@pytest.mark.parametrize("kw, batch_size", [
    (dict(), 48),                        # k_target = 3 < 12: the winners-only kernel
    (dict(), 20),                        # two batches of one epoch, the rest dropped
    (dict(k_target=12), 48),             # k = n_neurons: the masked matmuls
    (dict(nonneg_decoder=True), 16),     # the projection clamps the decoder too
])
def test_default_sdmlp_steps_are_plain_sgd_then_projection(kw, batch_size):
    """Each step is exactly p ← after_step(p − lr·g): no Adam, no momentum (which would add
    0.9·g₁ to the second step), no weight decay; the whole-set batch (48) starts a new epoch
    at the second step, the others take two batches of one permutation."""
    X, y = _data(48, 4, seed=1)
    layer = _sdmlp(**kw)
    start = copy.deepcopy(layer)
    report = train_router(RouterRegressor(layer), X, y,
                          RouterTraining(steps=2, batch_size=batch_size, lr=LR,
                                         schedule="constant", grad_clip=None), seed=11)
    assert report.optimizer == "sgd" and report.lr == LR
    expected, _ = _reference_sgd(start, X, y, steps=2, batch_size=batch_size, seed=11)
    _assert_same_parameters(layer, expected, exact=True)
    # the test can tell momentum apart: its second step would differ by 0.9·lr·g₁
    with_momentum = copy.deepcopy(start)
    params = [p for p in with_momentum.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=LR, momentum=0.9)
    z, gen = _standardised(y), torch.Generator().manual_seed(11)
    order, pos = torch.randperm(48, generator=gen), 0
    for _ in range(2):
        if pos + batch_size > 48:
            order, pos = torch.randperm(48, generator=gen), 0
        batch = order[pos:pos + batch_size]
        pos += batch_size
        opt.zero_grad()
        ((with_momentum(X[batch])[0][:, 0] - z[batch]) ** 2).mean().backward()
        opt.step()
        with_momentum.after_step()
    assert not torch.allclose(with_momentum.decoder, layer.decoder, rtol=1e-6, atol=1e-9)


def test_train_router_divergence_blames_lr_not_x():
    import numpy as np

    from experiments.kinds.router_training import evaluate_router
    from routing.layers import SigmaMoE, SigmaMoEConfig

    X2 = np.random.default_rng(0).uniform(-1, 1, (40, 2))
    layer = SigmaMoE(SigmaMoEConfig(d_in=2, n_experts=4, expert_size=4, k=2, seed=0))
    with pytest.raises(ValueError, match="lr=1e\\+30"):
        train_router(RouterRegressor(layer), X2, X2.sum(1), RouterTraining(steps=20, lr=1e30))
    model = RouterRegressor(SigmaMoE(SigmaMoEConfig(d_in=2, n_experts=4, expert_size=4, k=2)))
    train_router(model, X2, X2.sum(1), RouterTraining(steps=5))
    assert math.isfinite(evaluate_router(model, X2, X2.sum(1))["linf"])
