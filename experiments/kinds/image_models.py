"""Image classifiers of the real-data experiments and the loop that trains them.

* ``TopKMLP``: x ↦ V · TopK_k(ReLU(W x + b)) + c, exactly k hidden units kept per example
  (ties by the lowest index, ``routing.torch_twins.topk_mask``), the others masked to 0. With
  k < width it is Baykal et al. 2022's data-dependent sparse layer (DSM, §2.1, the "CNN +
  DSM" head of §5 CIFAR-10) and Bricken et al. 2023's "Top-K" baseline (§5: a ReLU MLP with
  the Top-K activation, bias and no L2 normalisation); with k = width it is the dense ReLU
  layer ("CNN + dense").
* ``SDMLPMask``: ``routing.layers.SDMLP`` with Top-K by *masking* instead of subtracting the
  (k+1)-th activation: Bricken et al. 2023's "Linear Mask" ablation (Table 2, App. B.3,
  Fig. 10).
* ``ConvNet``: Baykal et al. 2022 §5's CNN: 3 convolutional layers, each followed by
  max-pooling, a penultimate layer (a ``TopKMLP`` head: dense or DSM) and the logits.
* ``four_layer_mlp``: COMET §5.2.1's 4-layer MLP (3 hidden layers of N neurons): COMET at
  p_k, the "standard model" (p_k = 1) and the "smaller model" (p_k N neurons, p_k = 1).

Every model maps x to ``(logits (B, n_classes), aux_losses)`` like the layers of
``routing.layers``; ``fit_classifier`` trains any of them with the cross-entropy plus the aux
losses, calling the layers' hooks (``set_training_progress`` at every epoch: SDMLP anneals k;
``after_step``: SDMLP projects its weights) and their gradient clipping
(``default_grad_clip``), and ``accuracy`` measures them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from experiments.kinds.fitting import adam_optimizer, clear_grads
from routing.layers import COMET, COMETConfig, RouterLayer, SDMLP
from routing.layers import OPTIMIZERS, uniform_fan_in_
from routing.layers.comet import k_winners
from routing.torch_twins import topk_mask
from routing.validation import (check_bool, check_choice, check_int, check_real, check_seed,
                                 check_tensor)

__all__ = ["TopKMLP", "SDMLPMask", "ConvNet", "four_layer_mlp", "TrainSettings",
           "fit_classifier", "accuracy", "predict", "router_layers"]


class TopKMLP(RouterLayer):
    """One hidden ReLU layer keeping the k largest activations per example.

        h = ReLU(W x + b)  (B, width);   y = V (h ∘ TopK_k(h)) + c  (B, d_out)

    Exactly k units are kept per row (ties by the lowest index); gradient flows through the
    kept units only. k = width skips the selection: the dense layer.

    Arguments:
        d_in, width, d_out: sizes (>= 1); k: kept units, 1 <= k <= width.
        seed: >= 0, seeds the initialisation, U(±1/√fan_in) for weights and biases (PyTorch's
            ``nn.Linear`` default), from its own generator.

    Usage buffers count the *kept* units (selected by Top-K), as the other router layers.

    Raises:
        ValueError: sizes out of range; ``forward`` naming x (``RouterLayer.check_input``).
    """

    name = "topk_mlp"

    def __init__(self, d_in: int, width: int, k: int, d_out: int, seed: int = 0):
        width = check_int(width, "width", 1)
        super().__init__(width)
        self.d_in, self.width = check_int(d_in, "d_in", 1), width
        self.k, self.d_out = check_int(k, "k", 1, width), check_int(d_out, "d_out", 1)
        self.config = _Sizes(self.d_in, self.d_out)
        self.hidden = nn.Linear(self.d_in, width)
        self.out = nn.Linear(width, self.d_out)
        uniform_fan_in_((self.hidden, self.out), torch.Generator().manual_seed(check_seed(seed)))

    def _input_like(self) -> torch.Tensor:
        return self.hidden.weight

    def activations(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(h ∘ mask (B, width), mask (B, width) bool) for x (B, d_in)."""
        h = torch.relu(self.hidden(self.check_input(x)))
        if self.k == self.width:
            return h, torch.ones_like(h, dtype=torch.bool)
        mask = topk_mask(h.detach(), self.k)
        return h * mask, mask

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """x (B, d_in) -> (y (B, d_out), {})."""
        h, mask = self.activations(x)
        self.record_usage(weights=mask)
        return self.check_output(self.out(h), x), {}

    @property
    def activated_units(self) -> int:
        """k."""
        return self.k

    @property
    def total_units(self) -> int:
        """width."""
        return self.width

    def flops_per_example(self) -> int:
        """2·(d_in·width + k·d_out): every unit is computed (Top-K needs all), k read out."""
        return 2 * (self.d_in * self.width + self.k * self.d_out)


@dataclass(frozen=True)
class _Sizes:
    """The config fields ``RouterLayer.check_input`` and a sweep's training read: the sizes,
    and the optimiser and rate of a sweep (``RouterTraining``; the dense MLP's, Adam at 1e-3;
    the continual harness trains the Top-K MLP by its own rule, Bricken et al.'s SGD)."""

    d_in: int
    d_out: int = 1
    optimizer: str = "adam"
    lr: float = 1e-3


class SDMLPMask(SDMLP):
    """SDMLP whose Top-K masks instead of subtracting: a* = a ∘ TopK_k(a), the k largest
    activations kept as they are (Makhzani & Frey 2014's k-sparse rule), everything else of
    ``routing.layers.SDMLP`` unchanged (L2-normalised inputs and addresses, no bias,
    non-negative weights, k annealing, SGD).

    Source: Bricken et al. 2023, Table 2 ("Linear Mask" against "Linear Subtract"), App. B.3
    ("Why subtracting works better than masking for Continual Learning"), Fig. 10.

    Arguments and errors: as ``SDMLP``.
    """

    name = "sdmlp_mask"

    def _gather_path(self, x: torch.Tensor) -> bool:
        return False  # the winners-only kernel subtracts; masking takes the torch path

    def _hidden(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = self._normalise(x) @ self.encoder.T  # (B, N)
        if self.current_k == self.config.n_neurons:
            return a.clamp(min=0), torch.ones_like(a, dtype=torch.bool)
        active = topk_mask(a.detach(), self.current_k)
        return a.clamp(min=0) * active, active


class ConvNet(nn.Module):
    """Baykal et al. 2022 §5's CNN: 3 × (3×3 convolution, padding 1, ReLU, 2×2 max-pooling),
    flattened, then a ``TopKMLP`` head (the penultimate layer and the logits).

    The paper gives neither channels nor kernel sizes; ours are 3×3 kernels and ``channels``.
    Pooling rounds up (``ceil_mode``), so 8×8 digits go 8 → 4 → 2 → 1 and 32×32 CIFAR-10
    images 32 → 16 → 8 → 4.

    Arguments:
        image_shape: (H, W, C) of the inputs (>= 1 each).
        channels: output channels of the three convolutions (>= 1 each).
        width, k: the head's total width and kept units (k = width: "CNN + dense").
        n_classes: logits (>= 2).
        seed: >= 0, seeds every initialisation (convolutions from their own generator).

    ``forward(x)``: x (B, H, W, C) float → (logits (B, n_classes), {}).

    Raises:
        ValueError: sizes out of range; ``forward``: x not a finite (B, H, W, C) tensor of the
            parameters' dtype.
    """

    def __init__(self, image_shape: tuple[int, int, int], channels: tuple[int, int, int],
                 width: int, k: int, n_classes: int = 10, seed: int = 0):
        super().__init__()
        if not isinstance(image_shape, (tuple, list)) or len(image_shape) != 3:
            raise ValueError(f"image_shape must be (H, W, C), got {image_shape!r}")
        h, w, c = (check_int(v, f"image_shape[{i}]", 1) for i, v in enumerate(image_shape))
        self.image_shape = (h, w, c)
        if len(channels) != 3:
            raise ValueError(f"channels must be 3 integers >= 1, got {channels!r}")
        channels = tuple(check_int(v, f"channels[{i}]", 1) for i, v in enumerate(channels))
        seed = check_seed(seed)
        layers, previous = [], c
        for out in channels:
            layers += [nn.Conv2d(previous, out, 3, padding=1), nn.ReLU(),
                       nn.MaxPool2d(2, ceil_mode=True)]
            previous = out
            h, w = math.ceil(h / 2), math.ceil(w / 2)
        self.features = nn.Sequential(*layers)
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for conv in self.features:
                if isinstance(conv, nn.Conv2d):
                    bound = (conv.in_channels * 9) ** -0.5
                    conv.weight.uniform_(-bound, bound, generator=generator)
                    conv.bias.uniform_(-bound, bound, generator=generator)
        self.head = TopKMLP(previous * h * w, width, k, check_int(n_classes, "n_classes", 2),
                            seed=seed + 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        dtype = self.head.hidden.weight.dtype
        x = check_tensor(x, "x", (None,) + self.image_shape, dtype=None)
        if x.dtype != dtype:
            raise ValueError(f"x must have dtype {dtype} (the parameters'), got {x.dtype}")
        z = self.features(x.permute(0, 3, 1, 2))  # (B, C, H, W) -> (B, channels[-1], h, w)
        return self.head(z.flatten(1))


def four_layer_mlp(d_in: int, width: int, p_k: float, n_classes: int = 10, seed: int = 0,
                   smaller: bool = False, optimizer: str = "adam", lr: float = 1e-3) -> COMET:
    """COMET §5.2.1's 4-layer MLP: 3 hidden ReLU layers and the logits, as a ``COMET``.

    * ``p_k`` < 1, ``smaller`` False: COMET, each hidden layer of ``width`` gated by the fixed
      random routing network to its round(p_k·width) winners (``COMETConfig``);
    * ``p_k`` = 1: the "standard model" (no sparsity: every mask is all ones);
    * ``smaller`` True: the "smaller model", dense, with k_winners(p_k, width) =
      round(p_k·width) neurons a layer, as many as COMET activates.

    Arguments:
        d_in: input size; width: neurons per hidden layer N; n_classes: logits (>= 1 each).
        p_k: fraction of winners in (0, 1]. seed: >= 0.
        optimizer, lr: stored in the config, read by ``fit_classifier``.

    Returns:
        a ``COMET`` on the CPU in float32.

    Raises:
        ValueError: arguments out of range.
    """
    p_k = check_real(p_k, "p_k", 0.0, 1.0, low_open=True)
    width = check_int(width, "width", 1)
    if check_bool(smaller, "smaller"):
        width, p_k = k_winners(p_k, width), 1.0
    return COMET(COMETConfig(d_in=d_in, widths=(width,) * 3, d_out=n_classes, p_k=p_k,
                             optimizer=optimizer, lr=lr, seed=seed))


def router_layers(model: nn.Module) -> list[RouterLayer]:
    """The ``RouterLayer`` modules of ``model`` (itself included), whose training hooks
    ``fit_classifier`` calls."""
    return [m for m in model.modules() if isinstance(m, RouterLayer)]


@dataclass(frozen=True)
class TrainSettings:
    """How ``fit_classifier`` trains.

    Attributes:
        epochs: passes over the data (>= 1).
        batch_size: examples per step (>= 1; the whole set if it is smaller).
        optimizer: "adam" or "sgd" (plain SGD, no momentum: Bricken et al. 2023 §4).
        lr: learning rate (> 0), constant.
        grad_clip: clip the gradient's global L2 norm at this (> 0); None: the largest
            ``default_grad_clip`` of the model's router layers (SDMLP: 1.0), if any.

    Raises:
        ValueError: values out of range.
    """

    epochs: int
    batch_size: int = 64
    optimizer: str = "adam"
    lr: float = 1e-3
    grad_clip: float | None = None

    def __post_init__(self):
        check_int(self.epochs, "epochs", 1)
        check_int(self.batch_size, "batch_size", 1)
        check_choice(self.optimizer, "optimizer", OPTIMIZERS)
        check_real(self.lr, "lr", 0.0, low_open=True)
        if self.grad_clip is not None:
            check_real(self.grad_clip, "grad_clip", 0.0, low_open=True)


def fit_classifier(model: nn.Module, X: torch.Tensor, y: torch.Tensor,
                   settings: TrainSettings, seed: int = 0, epoch_offset: int = 0,
                   penalty: Callable[[], torch.Tensor] | None = None,
                   on_epoch: Callable[[int], None] | None = None) -> float:
    """Train ``model`` in place on (X, y) with the cross-entropy (mean over the batch), plus
    the model's aux losses and ``penalty()`` (EWC), by minibatches in a seeded order.

    At the start of epoch e every router layer gets ``set_training_progress(epoch_offset +
    e)`` (so SDMLP's k annealing runs on across continual-learning tasks); after every step
    ``after_step()``. The layers' usage counting is off while training and their
    ``track_usage`` flags are restored afterwards: utilisation is measured on evaluation data.

    Arguments:
        model: maps X[batch] to (logits (B, C), aux dict).
        X: (N, ...) float tensor on the model's device; y: (N,) int64 class labels.
        settings: ``TrainSettings``.
        seed: seed of the minibatch order (>= 0).
        epoch_offset: epochs already trained (>= 0).
        penalty: a scalar tensor added to every step's loss, or None.
        on_epoch: called with the epoch index (0-based, without the offset) after each epoch.

    Returns:
        the mean training loss of the last epoch (cross-entropy and penalties).

    Raises:
        ValueError: X and y of different lengths or empty, bad seed or offset.
    """
    if len(X) != len(y) or len(X) == 0:
        raise ValueError(f"X and y must have the same positive number of rows, got {len(X)} "
                         f"and {len(y)}")
    seed, epoch_offset = check_seed(seed), check_int(epoch_offset, "epoch_offset", 0)
    layers = router_layers(model)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = (adam_optimizer(params, lr=settings.lr) if settings.optimizer == "adam"
                 else torch.optim.SGD(params, lr=settings.lr))
    clip = settings.grad_clip
    if clip is None:
        clips = [layer.default_grad_clip for layer in layers if layer.default_grad_clip]
        clip = max(clips) if clips else None
    generator = torch.Generator().manual_seed(seed)
    n, bs = len(X), min(settings.batch_size, len(X))
    model.train()
    last = float("nan")
    # nothing reads the usage counted while training (utilisation is measured on evaluation
    # data, after a reset): not counting it saves a reduction per layer and step
    tracking = [layer.track_usage for layer in layers]
    for layer in layers:
        layer.track_usage = False
    try:
        for epoch in range(settings.epochs):
            for layer in layers:
                layer.set_training_progress(epoch_offset + epoch)
            order = torch.randperm(n, generator=generator).to(X.device)
            total, batches = 0.0, 0
            for start in range(0, n, bs):
                batch = order[start:start + bs]
                logits, aux = model(X[batch])
                loss = nn.functional.cross_entropy(logits, y[batch])
                if aux:
                    loss = loss + sum(aux.values())
                if penalty is not None:
                    loss = loss + penalty()
                clear_grads(optimizer)
                loss.backward()
                if clip is not None:
                    torch.nn.utils.clip_grad_norm_(params, clip)
                optimizer.step()
                for layer in layers:
                    layer.after_step()
                total += float(loss.detach())
                batches += 1
            last = total / batches
            if on_epoch is not None:
                on_epoch(epoch)
    finally:
        for layer, flag in zip(layers, tracking):
            layer.track_usage = flag
    model.eval()
    return last


@torch.no_grad()
def predict(model: nn.Module, X: torch.Tensor, batch_size: int = 4096) -> torch.Tensor:
    """Predicted classes (N,) int64 of ``model`` in eval mode; usage counting off.

    Raises:
        ValueError: ``batch_size`` not an integer >= 1; X as the model's ``forward``.
    """
    batch_size = check_int(batch_size, "batch_size", 1)
    was_training = model.training
    model.eval()
    layers = router_layers(model)
    tracking = [layer.track_usage for layer in layers]
    for layer in layers:
        layer.track_usage = False
    try:
        parts = [model(X[i:i + batch_size])[0].argmax(dim=1) for i in range(0, len(X),
                                                                           batch_size)]
    finally:
        for layer, flag in zip(layers, tracking):
            layer.track_usage = flag
        model.train(was_training)
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.int64, device=X.device)


def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of (X, y) classified correctly, in [0, 1] (nan for an empty set)."""
    if len(y) == 0:
        return float("nan")
    return float((predict(model, X) == y).double().mean())
