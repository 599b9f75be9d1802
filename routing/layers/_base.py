"""What every router layer of ``routing.layers`` shares: output and auxiliary losses, usage
buffers, sizes and costs.

A router layer maps a batch x (B, d_in) to y (B, d_out) through units (hidden neurons or
experts) of which only some take part in each example. ``forward`` returns
``(y, aux_losses)``: ``aux_losses`` maps a name to a scalar tensor that is *already multiplied
by its coefficient from the layer's config*, so a training loss is
``task_loss + sum(aux_losses.values())`` (an empty dict when the layer has none).

Usage is counted in registered buffers (so it survives ``state_dict`` round trips, the
STYLE.md rule for counters): ``unit_usage[j]`` sums, over the examples seen since the last
``reset_usage()``, the weight with which unit j took part (1 for a hard selection, the router
probability for soft merging); ``examples_seen`` counts those examples. ``utilisation()`` is
their ratio and ``dead_fraction()`` the share of units that never took part. Counting happens
in every forward pass, training or not, unless ``track_usage`` is False.
"""

from __future__ import annotations

import abc
from typing import Any

import torch
from torch import nn

from lipschitz.validation import check_choice, check_int, check_real, check_seed

__all__ = ["RouterLayer", "OPTIMIZERS", "check_layer_config"]

OPTIMIZERS = ("adam", "sgd")  # what experiments.router_training knows how to build


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


class RouterLayer(nn.Module, abc.ABC):
    """Base class of the router layers: ``forward(x) -> (y, aux_losses)`` plus usage buffers.

    Subclasses call ``super().__init__(n_units)`` (the number of units whose usage is
    counted: experts for the MoE layers, hidden neurons for COMET, SDMLP and PKM values), then
    call ``self.record_usage(...)`` inside ``forward``.

    Attributes:
        name: short router name used in result tables ("comet", "sigma_moe", …).
        unit_usage: buffer (n_units,) float64, summed usage weight per unit.
        examples_seen: buffer () float64, examples counted.
        track_usage: when False, ``record_usage`` does nothing.
    """

    name: str = "router"
    #: Gradient-norm clipping a trainer should apply by default (None: none).
    default_grad_clip: float | None = None

    def __init__(self, n_units: int):
        super().__init__()
        self.track_usage = True
        self.register_buffer("unit_usage", torch.zeros(n_units, dtype=torch.float64))
        self.register_buffer("examples_seen", torch.zeros((), dtype=torch.float64))

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
            ValueError: if not exactly one of ``indices`` and ``weights`` is given.
        """
        if not self.track_usage:
            return
        if (indices is None) == (weights is None):
            raise ValueError("record_usage needs exactly one of indices and weights")
        if indices is not None:
            flat = indices.reshape(-1) + offset
            # the buffer's dtype: ``layer.float()`` converts it along with the parameters
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
            RuntimeError: if no example was counted yet (the fraction would be meaningless).
        """
        if float(self.examples_seen) == 0:
            raise RuntimeError("no examples counted since the last reset_usage(); run a forward "
                               "pass first")
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
        """Hook run at the start of every epoch (SDMLP anneals k here)."""

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable summary for result tables."""
        return {"router": self.name, "activated_units": self.activated_units,
                "total_units": self.total_units, "n_units": self.n_units,
                "params": sum(p.numel() for p in self.parameters() if p.requires_grad),
                "flops": self.flops_per_example()}
