"""What every router layer of ``routing.layers`` shares: output and auxiliary losses, usage
buffers, sizes and costs.

A router layer maps a batch x (B, d_in) to y (B, d_out) through units (hidden neurons or
experts) of which only some take part in each example. ``forward`` returns
``(y, aux_losses)``: ``aux_losses`` maps a name to a scalar tensor that is *already multiplied
by its coefficient from the layer's config*, so a training loss is
``task_loss + sum(aux_losses.values())`` (an empty dict when the layer has none).

Usage is counted in registered buffers (so it survives ``state_dict`` round trips, as
BatchNorm's running statistics do): ``unit_usage[j]`` sums, over the examples seen since the last
``reset_usage()``, the weight with which unit j took part (1 for a hard selection, the router
probability for soft merging); ``examples_seen`` counts those examples. ``utilisation()`` is
their ratio and ``dead_fraction()`` the share of units that never took part. Counting happens
in every forward pass, training or not, unless ``track_usage`` is False. The counters stay
float64 whatever dtype the parameters are converted to (``.half()``, ``.to(torch.bfloat16)``),
so counts are exact up to 2^53.

"Took part" means *selected by the router*, not "had a nonzero activation":

* ``SigmaMoE``, ``TopKMoE``: the K experts of the top-K; with σ-MoE's expert dropout in
  training, only the selected experts that were kept (Eq. 22: a dropped expert that fills a
  top-K slot because fewer than K survived has gate 0 and is not selected);
* ``PKM``: the k value slots of the top-k scores, including a slot whose ReLU score is
  negative (gate 0);
* ``COMET``: the neurons whose k-WTA mask bit is 1, whatever the sign of f(a);
* ``SDMLP``: the ``current_k`` Top-K winners, including one whose activation minus the
  (k+1)-th is 0 (under the GABA switch: the neurons with a* > 0);
* ``SMEAR``: every expert, weighted by its router probability (after expert dropout), so one
  example's usage sums to 1.

Every public method that takes a batch x checks it with ``RouterLayer.check_input``: a
``torch.Tensor`` of shape (B, d_in) with the parameters' dtype and device and finite entries,
else a ValueError naming ``x``. Every ``forward`` checks its output too
(``RouterLayer.check_output``): a finite x can still overflow a layer's products, and a
diverged parameter makes NaN; either is a ValueError naming x or the parameter, never a NaN
handed on.
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from torch import nn

from routing.validation import (check_allocation, check_choice, check_finite_tensor, check_int,
                                check_real, check_seed)

__all__ = ["RouterLayer", "OPTIMIZERS", "check_layer_config", "check_parameter_memory",
           "NoUsageCountedError"]

OPTIMIZERS = ("adam", "sgd")  # what experiments.kinds.router_training knows how to build


class NoUsageCountedError(ValueError, RuntimeError):
    """``dead_fraction()`` before any example was counted (a ValueError, as every misuse of
    sparselab's API, and a RuntimeError, as it was first raised)."""


def check_layer_config(config) -> None:
    """Check the fields every layer config has: d_in and d_out (integers >= 1), optimizer
    (one of ``OPTIMIZERS``), lr (> 0) and seed (integer >= 0).

    Raises:
        ValueError: naming the field and its allowed range.
    """
    check_int(config.d_in, "d_in", 1)
    check_int(config.d_out, "d_out", 1)
    check_choice(config.optimizer, "optimizer", OPTIMIZERS)
    check_real(config.lr, "lr", 0.0, low_open=True)
    check_seed(config.seed)


def check_parameter_memory(n_values: int, sizes: dict) -> None:
    """Refuse a layer config whose parameters would not fit in this machine's memory.

    Training keeps four numbers per parameter (the value, its gradient and Adam's two
    moments), float32 by default: 16 bytes each.

    Arguments:
        n_values: the number of parameter values the layer would create.
        sizes: the config's size fields, name -> value; the largest is named in the error.

    Raises:
        ValueError: naming the largest size field, its value and the memory needed.
    """
    name = max(sizes, key=lambda k: int(sizes[k]))
    shape = ", ".join(f"{k}={v}" for k, v in sizes.items())
    check_allocation(n_values, 16, name, sizes[name],
                     f"{n_values} float32 parameters ({shape}) with their gradients and Adam's "
                     "two moments")


@torch.no_grad()
def uniform_fan_in_(linears, generator: torch.Generator) -> None:
    """PyTorch's default ``nn.Linear`` initialisation, U(−1/√fan_in, 1/√fan_in) for the weight
    and the bias, drawn from ``generator`` (not the global RNG) in the order given: weight,
    then bias, layer after layer.

    Arguments:
        linears: ``nn.Linear`` modules (a bias may be None).
        generator: the seeded ``torch.Generator`` to draw from (CPU).
    """
    for linear in linears:
        bound = linear.in_features ** -0.5
        for p in (linear.weight, linear.bias):
            if p is not None:
                p.uniform_(-bound, bound, generator=generator)


class RouterLayer(nn.Module, abc.ABC):
    """Base class of the router layers: ``forward(x) -> (y, aux_losses)`` plus usage buffers.

    Subclasses call ``super().__init__(n_units)`` (the number of units whose usage is
    counted: experts for the MoE layers, hidden neurons for COMET, SDMLP and PKM values), then
    call ``self.record_usage(...)`` inside ``forward``. They have ``self.config.d_in`` and
    override ``_input_like`` to return one of their parameters cheaply.

    Attributes:
        name: short router name used in result tables ("comet", "sigma_moe", …).
        unit_usage: buffer (n_units,) float64, summed usage weight per unit.
        examples_seen: buffer () float64, examples counted.
        track_usage: when False, ``record_usage`` does nothing.
    """

    name: str = "router"
    #: Gradient-norm clipping a trainer should apply by default (None: none).
    default_grad_clip: float | None = None
    #: float64 counter buffers that dtype conversions of the module leave float64 (``_apply``).
    _counter_buffers: tuple[str, ...] = ("unit_usage", "examples_seen")

    def __init__(self, n_units: int):
        super().__init__()
        self.track_usage = True
        self.register_buffer("unit_usage", torch.zeros(n_units, dtype=torch.float64))
        self.register_buffer("examples_seen", torch.zeros((), dtype=torch.float64))

    def _apply(self, fn, recurse=True):
        """``nn.Module._apply`` (behind ``.to``, ``.half()``, ``.cuda()``, …), except that the
        counters named in ``_counter_buffers`` keep float64 and their values: a float32 count
        stops at 2^24 and a bfloat16 one at 256, and a converted-back count stays rounded. The
        original float64 counter is moved to the device ``fn`` chose."""
        counters = {name: self._buffers.get(name) for name in self._counter_buffers}
        super()._apply(fn, recurse)
        for name, old in counters.items():
            new = self._buffers.get(name)
            if old is not None and new is not None and new.dtype != torch.float64:
                self._buffers[name] = old.to(new.device)
        return self

    # -- input ------------------------------------------------------------------------------
    def _input_like(self) -> torch.Tensor:
        """A parameter whose dtype and device x must have. Subclasses return an attribute:
        ``next(self.parameters())`` costs 1.5-2.5 us a call, about the whole budget of
        ``check_input``."""
        return next(self.parameters())

    def check_input(self, x, finite: bool = True) -> torch.Tensor:
        """Check a batch x before a layer uses it, and return it.

        About 3.4 us a call on a (1024, 8) float32 CPU tensor (timeit, best of 7; 1.1 us with
        ``finite=False``), most of it the finiteness test (``check_finite_tensor``: one sum,
        then an entry-wise test only when the sum is not finite); a training step of these
        layers takes about 0.5 ms. ``finite=False`` skips that test, for callers whose
        kernel detects a non-finite x itself (its scores are then not finite) and then
        names x.

        Arguments:
            x: the batch, expected a (B, d_in) torch.Tensor (B may be 0) of the parameters'
                dtype and device.
            finite: also require every entry of x to be finite.

        Returns:
            x itself.

        Raises:
            ValueError: naming ``x`` if it is not a torch.Tensor, not 2-D with d_in columns,
                not of the parameters' dtype or device, or (``finite``) has NaN or infinite
                entries.
        """
        d_in = self.config.d_in
        if not isinstance(x, torch.Tensor):
            raise ValueError(f"x must be a torch.Tensor of shape (B, {d_in}), got "
                             f"{type(x).__module__}.{type(x).__name__}")
        if x.ndim != 2 or x.shape[1] != d_in:
            raise ValueError(f"x must have shape (B, {d_in}), got shape {tuple(x.shape)}")
        like = self._input_like()
        if x.dtype != like.dtype:
            raise ValueError(f"x must have dtype {like.dtype} (the layer's parameters'), got "
                             f"{x.dtype}; convert x, or the layer with .to({x.dtype})")
        if x.device != like.device:
            raise ValueError(f"x must be on device {like.device} (the layer's parameters'), "
                             f"got {x.device}")
        if finite:
            check_finite_tensor(x, "x")
        return x

    def check_output(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Return y after checking that it is finite: a finite x can still make a layer's
        products overflow (x of order 1e38 in float32), and NaN must not leave the layer
        silently. About 1 us on a (1024, 1) y (one sum; ``check_finite_tensor``).

        Arguments:
            y: the layer's output (B, d_out); x: the checked input it came from.

        Returns:
            y itself.

        Raises:
            ValueError: naming x, with its largest magnitude and dtype, when y has NaN or
                infinite entries and the parameters are finite; naming the parameters when
                one of them is not finite (e.g. after a diverged training step).
        """
        try:
            check_finite_tensor(y, "y")
        except ValueError:
            for name, p in self.named_parameters():
                if not bool(torch.isfinite(p).all()):
                    raise ValueError(f"the layer's parameter {name} must be finite; it has "
                                     f"NaN or infinite entries") from None
            raise ValueError(f"x must be small enough for the layer's products not to "
                             f"overflow in {x.dtype}: the output is not finite for this x "
                             f"(finite, max |x| = {float(x.detach().abs().max()):.3g}); scale "
                             f"x down or use float64") from None
        return y

    # -- usage ------------------------------------------------------------------------------
    @torch.no_grad()
    def record_usage(self, *, indices: torch.Tensor | None = None,
                     weights: torch.Tensor | None = None, offset: int = 0,
                     count_examples: bool = True) -> None:
        """Add one batch to the usage buffers.

        Arguments:
            indices: (B, a) int64 unit indices that took part in each example (weight 1 each),
                or None.
            weights: (B, m) non-negative usage weight of units offset..offset+m-1 per example
                (a 0/1 mask or router probabilities), or None. Give exactly one of the two.
            offset: index of the first unit the batch refers to (layers that count several
                groups of units in one buffer, e.g. COMET's hidden layers, call once per
                group with ``count_examples=True`` only for the first).
            count_examples: add B to ``examples_seen``.

        Raises:
            ValueError: if not exactly one of ``indices`` and ``weights`` is given, or
                ``offset`` is not an integer in [0, n_units - 1].
        """
        if not self.track_usage:
            return
        if (indices is None) == (weights is None):
            raise ValueError("record_usage needs exactly one of indices and weights")
        offset = check_int(offset, "offset", 0, self.unit_usage.numel() - 1)
        if indices is not None:
            flat = indices.reshape(-1) + offset
            # float64 ones: ``index_add_`` needs the buffer's dtype, which ``_apply`` keeps
            # float64 through ``layer.float()`` or ``.half()``
            self.unit_usage.index_add_(0, flat, torch.ones_like(flat,
                                                                dtype=self.unit_usage.dtype))
            batch = indices.shape[0]
        else:
            totals = weights.detach().to(self.unit_usage.dtype).sum(0)
            self.unit_usage[offset:offset + totals.numel()] += totals
            batch = weights.shape[0]
        if count_examples:
            self.examples_seen += batch

    @torch.no_grad()
    def reset_usage(self) -> None:
        """Zero the usage buffers (e.g. before measuring utilisation on an evaluation set)."""
        self.unit_usage.zero_()
        self.examples_seen.zero_()

    def utilisation(self) -> torch.Tensor:
        """(n_units,) float64: mean usage weight per example of each unit since the last reset
        (the fraction of examples in which a hard-routed unit was active); zeros before any
        example was seen."""
        seen = float(self.examples_seen)
        return self.unit_usage / seen if seen > 0 else torch.zeros_like(self.unit_usage)

    def dead_fraction(self) -> float:
        """Fraction of units that took part in no example since the last reset (in [0, 1]).

        Raises:
            NoUsageCountedError (a ValueError and a RuntimeError): if no example was counted
                yet (the fraction would be meaningless); the message says whether
                ``track_usage`` is off.
        """
        if float(self.examples_seen) == 0:
            if not self.track_usage:
                raise NoUsageCountedError(
                    f"dead_fraction() needs counted examples, and this {type(self).__name__} "
                    "counts none: track_usage is False; set layer.track_usage = True, then run a "
                    "forward pass")
            raise NoUsageCountedError(
                f"dead_fraction() needs counted examples: this {type(self).__name__} has seen "
                "none since it was built or since reset_usage(); run a forward pass first")
        return float((self.unit_usage == 0).double().mean())

    # -- sizes, costs and training hooks ----------------------------------------------------
    @property
    def n_units(self) -> int:
        """Number of units whose usage is counted."""
        return self.unit_usage.numel()

    @property
    @abc.abstractmethod
    def activated_units(self) -> int:
        """Hidden units that take part in one example's output (what 'matched activated units'
        compares across routers; for an MoE: experts per example × expert width)."""

    @property
    @abc.abstractmethod
    def total_units(self) -> int:
        """All hidden units (for an MoE: n_experts × expert width)."""

    @abc.abstractmethod
    def flops_per_example(self) -> int:
        """Multiply-adds ×2 per example of one forward pass, routing included."""

    def after_step(self) -> None:
        """Hook run after every optimiser step (SDMLP projects its weights here)."""

    def set_training_progress(self, epoch: int) -> None:
        """Hook run at the start of every epoch (SDMLP anneals k here).

        Arguments:
            epoch: the epoch about to start, an integer >= 0.

        Raises:
            ValueError: if ``epoch`` is not an integer >= 0 (1.5, -1, True, "2").
        """
        check_int(epoch, "epoch", 0)

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable summary for result tables."""
        return {"router": self.name, "activated_units": self.activated_units,
                "total_units": self.total_units, "n_units": self.n_units,
                "params": sum(p.numel() for p in self.parameters() if p.requires_grad),
                "flops": self.flops_per_example()}
