"""Training the router layers of ``routing.layers`` as regressors on the Lipschitz targets.

Unlike the models of ``routing.models`` (frozen features, linear top layer, exact fit),
the routers learn their routing (σ-MoE, top-k MoE, PKM, SMEAR, SDMLP) or their
backbone (COMET), so they are trained end to end: minibatches, the MSE plus the layer's
auxiliary losses (``forward`` returns them already weighted), the layer's own optimiser
(Adam, or plain SGD for SDMLP: Bricken et al. 2023 §4, stale momentum), a cosine learning-rate
decay, ``layer.set_training_progress(epoch)`` at the start of every pass over the data (SDMLP
anneals k there) and ``layer.after_step()`` after every step (SDMLP projects its weights).

Targets are standardised: ``RouterRegressor`` predicts ȳ + s_y · layer(x), with the training
targets' mean ȳ and standard deviation s_y stored in buffers, and the training loss is the MSE
on the standardised scale (so the layers' paper initialisations, made for outputs of unit
scale, and their auxiliary-loss coefficients mean the same on every target; the random
polynomial of Baykal et al. §5 has outputs of standard deviation about 3e-3). Reported MSEs
are in the target's own units.

Utilisation is measured on the evaluation set: usage counters are reset, the evaluation pass
counts which units take part, and the report gives the dead fraction and the coefficient of
variation of the per-unit usage (0 for perfectly balanced routing).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import torch
from torch import nn
from tqdm.auto import tqdm

from experiments.kinds.fitting import adam_optimizer, clear_grads
from routing.validation import (check_bool, check_choice, check_int, check_real, check_seed,
                                check_tensor)
from routing.layers import RouterLayer
from routing.layers import OPTIMIZERS

__all__ = ["RouterRegressor", "RouterTraining", "RouterFitReport", "train_router",
           "evaluate_router", "OPTIMIZERS", "LAYER_GRAD_CLIP"]

#: ``RouterTraining.grad_clip`` value meaning "the layer's ``default_grad_clip``".
LAYER_GRAD_CLIP = "layer"


@dataclass(frozen=True)
class RouterTraining:
    """How a router layer is trained.

    Attributes:
        steps: optimiser steps (>= 1).
        batch_size: examples per step (>= 1; the whole set if it is smaller).
        lr: learning rate; None takes the layer config's ``lr``.
        optimizer: "adam" or "sgd"; None takes the layer config's ``optimizer``.
        schedule: "cosine" (decay to 0 over ``steps``) or "constant".
        grad_clip: gradient clipping: a float > 0 clips the gradient's global L2 norm to it;
            None does not clip; ``LAYER_GRAD_CLIP`` ("layer", the default) takes the layer's
            ``default_grad_clip`` (1.0 for SDMLP, as the authors' code; none for the others).

    Raises:
        ValueError: for values outside the ranges above (for grad_clip: naming it, when it is
            neither "layer", None nor a finite real > 0).
    """

    steps: int = 2_000
    batch_size: int = 256
    lr: float | None = None
    optimizer: str | None = None
    schedule: str = "cosine"
    grad_clip: float | str | None = LAYER_GRAD_CLIP

    def __post_init__(self):
        check_int(self.steps, "steps", 1)
        check_int(self.batch_size, "batch_size", 1)
        if self.lr is not None:
            check_real(self.lr, "lr", 0.0, low_open=True)
        if self.optimizer is not None:
            check_choice(self.optimizer, "optimizer", OPTIMIZERS)
        if isinstance(self.grad_clip, str):
            if self.grad_clip != LAYER_GRAD_CLIP:
                raise ValueError(f"grad_clip must be {LAYER_GRAD_CLIP!r} (the layer's default), "
                                 f"None (no clipping) or a real > 0, got {self.grad_clip!r}")
        elif self.grad_clip is not None:
            check_real(self.grad_clip, "grad_clip", 0.0, low_open=True)
        if self.schedule not in ("cosine", "constant"):
            raise ValueError(f"schedule must be 'cosine' or 'constant', got {self.schedule!r}")

    def clip_for(self, layer: RouterLayer) -> float | None:
        """The clip norm to use on ``layer``: ``grad_clip``, or the layer's
        ``default_grad_clip`` when ``grad_clip`` is ``LAYER_GRAD_CLIP``; None: no clipping."""
        if isinstance(self.grad_clip, str):  # LAYER_GRAD_CLIP, checked at construction
            return layer.default_grad_clip
        return None if self.grad_clip is None else float(self.grad_clip)


@dataclass
class RouterFitReport:
    """What ``train_router`` did: final training MSE (recomputed after training, target
    units), steps, epochs, optimiser, learning rate, ``grad_clip`` (the clip norm actually
    applied, the layer's default resolved; None when the gradient was not clipped), seconds,
    and (step, standardised batch MSE) about 100 times."""

    train_mse: float
    steps: int
    epochs: float
    optimizer: str
    lr: float
    grad_clip: float | None
    wall_s: float
    loss_history: list[tuple[int, float]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


class RouterRegressor(nn.Module):
    """A router layer with d_out = 1 as a regressor: x (B, d_in) ↦ ȳ + s_y · layer(x) (B,).

    Arguments:
        layer: a ``routing.layers`` layer with ``config.d_out == 1``.

    Buffers ``y_mean`` and ``y_std`` (float64 scalars, 0 and 1 until ``train_router`` sets
    them from the training targets) undo the standardisation.

    Raises:
        ValueError: if the layer's d_out is not 1.
    """

    def __init__(self, layer: RouterLayer):
        super().__init__()
        if not isinstance(layer, RouterLayer):
            raise ValueError(f"layer must be a routing.layers layer, got {type(layer).__name__}")
        if layer.config.d_out != 1:
            raise ValueError(f"a regression layer needs d_out = 1, got {layer.config.d_out}")
        self.layer = layer
        self.register_buffer("y_mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("y_std", torch.ones((), dtype=torch.float64))

    def standardised(self, X: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """(layer(X)[:, 0] (B,), aux losses): the prediction on the standardised scale."""
        y, aux = self.layer(X)
        return y[:, 0], aux

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """(B,) predictions in the target's units, float64."""
        return self.y_mean + self.y_std * self.standardised(X)[0].to(torch.float64)


def _checked_data(layer, X, y):
    param = next(layer.parameters())
    where = dict(device=param.device, dtype=param.dtype, allow_bool=False)
    X = check_tensor(X, "X", (None, layer.config.d_in), **where)
    y = check_tensor(y, "y", (None,), **where)
    if len(X) != len(y):
        raise ValueError(f"X and y must have the same number of rows, got {len(X)} and {len(y)}")
    if len(X) == 0:
        raise ValueError("X must have at least one row")
    return X, y


@torch.no_grad()
def _check_not_diverged(params, history, lr: float, optimizer: str, step: int) -> None:
    """Raise a ValueError naming lr when training diverged: a parameter or a recorded loss
    is not finite. A diverged layer otherwise fails in its next forward pass with an error
    about x (its output check), which blames the data for the learning rate."""
    if (all(bool(torch.isfinite(p).all()) for p in params)
            and all(math.isfinite(loss) for _, loss in history)):
        return
    raise ValueError(f"training diverged by step {step}: the layer's parameters or the loss "
                     f"are NaN or infinite with optimizer={optimizer!r}, lr={lr:g}; lower lr "
                     "(RouterTraining.lr or the layer config's lr)")


def train_router(model: RouterRegressor, X, y, training: RouterTraining | None = None,
                 seed: int = 0, progress: bool = False) -> RouterFitReport:
    """Train ``model`` in place to regress y on X: the MSE on standardised targets plus the
    layer's aux losses (see the module docstring).

    Arguments:
        model: a ``RouterRegressor``; its layer's device and dtype are used.
        X: (N, d_in) real array or tensor; y: (N,) targets.
        training: the ``RouterTraining`` settings (default ``RouterTraining()``).
        seed: seed of the minibatch order (the layer's own seed fixes its initialisation).
        progress: show a progress bar.

    Returns:
        ``RouterFitReport``.

    Raises:
        ValueError: X or y of the wrong shape or not finite, a layer with d_out != 1, bad
            training settings, or training that diverged (NaN or infinite parameters or
            loss), naming lr.
    """
    if not isinstance(model, RouterRegressor):
        raise ValueError(f"model must be a RouterRegressor, got {type(model).__name__}")
    training = training or RouterTraining()
    if not isinstance(training, RouterTraining):
        raise ValueError(f"training must be a RouterTraining, got {type(training).__name__}")
    seed = check_seed(seed)
    progress = check_bool(progress, "progress")
    layer = model.layer
    X, y = _checked_data(layer, X, y)
    n = len(X)
    y64 = y.to(torch.float64)
    model.y_mean.fill_(float(y64.mean()))
    model.y_std.fill_(max(float(y64.std(unbiased=False)), 1e-12))
    z = ((y64 - model.y_mean) / model.y_std).to(y.dtype)  # standardised targets
    bs = min(training.batch_size, n)
    name = training.optimizer or getattr(layer.config, "optimizer", "adam")
    lr = training.lr or layer.config.lr
    params = [p for p in layer.parameters() if p.requires_grad]
    optimizer = (adam_optimizer(params, lr=lr) if name == "adam"
                 else torch.optim.SGD(params, lr=lr))
    clip = training.clip_for(layer)
    steps = training.steps
    schedule = None
    if training.schedule == "cosine":
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: 0.5 * (1.0 + math.cos(math.pi * min(s, steps) / steps)))
    generator = torch.Generator().manual_seed(seed)
    every = max(1, steps // 100)
    history: list[tuple[int, float]] = []
    order, pos, epoch = None, n, -1
    start = time.perf_counter()
    layer.train()
    tracking = layer.track_usage
    layer.track_usage = False  # utilisation is measured on the evaluation set
    try:
        for step in tqdm(range(steps), desc=f"train {layer.name}", disable=not progress,
                         leave=False):
            if pos + bs > n:
                epoch += 1
                layer.set_training_progress(epoch)
                order = torch.randperm(n, generator=generator).to(X.device)
                pos = 0
            batch = order[pos:pos + bs]
            pos += bs
            try:
                pred, aux = model.standardised(X[batch])
            except ValueError as error:  # the layer blames x or a parameter: x passed at
                _check_not_diverged(params, history, lr, name, step)  # step 0, so after it
                if step == 0:  # only the steps (the lr) changed the layer
                    raise
                largest = max(float(p.detach().abs().max()) for p in params)
                raise ValueError(
                    f"training diverged by step {step}: the layer's parameters grew to "
                    f"max |p| = {largest:.3g} with optimizer={name!r}, lr={lr:g}, and its "
                    f"forward pass fails ({error}); lower lr (RouterTraining.lr or the layer "
                    "config's lr)") from None
            error = pred - z[batch]
            loss = (error * error).mean()
            total = loss + sum(aux.values()) if aux else loss
            clear_grads(optimizer)
            total.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(params, clip)
            optimizer.step()
            layer.after_step()
            if schedule is not None:
                schedule.step()
            if step % every == 0 or step == steps - 1:
                history.append((step, float(loss.detach())))
    finally:
        layer.track_usage = tracking
        layer.eval()
    _check_not_diverged(params, history, lr, name, steps)
    train_mse = evaluate_router(model, X, y, count_usage=False)["mse"]
    return RouterFitReport(train_mse=train_mse, steps=steps, epochs=steps * bs / n,
                           optimizer=name, lr=float(lr), grad_clip=clip,
                           wall_s=time.perf_counter() - start,
                           loss_history=history)


@torch.no_grad()
def evaluate_router(model: RouterRegressor, X, y, batch_size: int = 8192,
                    count_usage: bool = True) -> dict[str, float]:
    """MSE, ℓ∞ error and utilisation of ``model`` (eval mode) on (X, y), in y's units.

    Arguments:
        model: a trained ``RouterRegressor``.
        X: (N, d_in), y: (N,), N >= 1.
        batch_size: rows per forward pass.
        count_usage: reset the usage counters and count this set (then the result has
            ``dead_fraction`` and ``usage_cv``, the coefficient of variation of per-unit usage).

    Returns:
        {"mse", "linf"} (float64 arithmetic, finite), plus {"dead_fraction", "usage_cv"} when
        ``count_usage``.

    Raises:
        ValueError: X or y of the wrong shape or not finite, ``count_usage`` not a bool; or,
            naming ``model``, a prediction that is NaN or infinite or squared errors that
            overflow float64 (a metric never hides a NaN: max(0, nan) would read 0).
    """
    layer = model.layer
    X, y = _checked_data(layer, X, y)
    batch_size = check_int(batch_size, "batch_size", 1)
    count_usage = check_bool(count_usage, "count_usage")
    was_training = layer.training
    tracking = layer.track_usage
    layer.eval()
    layer.track_usage = count_usage
    if count_usage:
        layer.reset_usage()
    sq, worst = 0.0, 0.0
    try:
        for lo in range(0, len(X), batch_size):
            pred = model(X[lo:lo + batch_size])
            bad = int((~torch.isfinite(pred)).sum())
            if bad:
                raise ValueError(f"model gives {bad} NaN or infinite predictions on rows "
                                 f"{lo}..{lo + len(pred) - 1} of X: its parameters are not "
                                 "finite or overflow (a diverged training?)")
            err = pred - y[lo:lo + batch_size].to(torch.float64)
            sq += float((err * err).sum())
            worst = max(worst, float(err.abs().max()))
    finally:
        layer.track_usage = tracking
        layer.train(was_training)
    if not (math.isfinite(sq) and math.isfinite(worst)):
        raise ValueError("model's squared errors overflow float64: its predictions or y are "
                         "too large; rescale y")
    result = {"mse": sq / len(X), "linf": worst}
    if count_usage:
        usage = layer.utilisation()
        mean = float(usage.mean())
        result["dead_fraction"] = layer.dead_fraction()
        result["usage_cv"] = float(usage.std(unbiased=False)) / mean if mean > 0 else float("nan")
    return result
