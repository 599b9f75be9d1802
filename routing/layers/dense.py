"""The dense baseline of the router comparisons: a two-layer ReLU MLP in which every hidden
unit takes part in every example, trained end to end like the routers.

    y = W2 ReLU(W1 x + b1) + b2

The router papers measure their layers against dense feedforward blocks: Csordás et al. 2023
§6 against dense baselines of the same size; COMET §5.2.1 against a "standard model" (the
same neurons, no sparsity) and a "smaller model" of p_k·N_ℓ neurons, the dense network with
as many active units as COMET's. At matched activated units a this layer has width a, the
smaller model, while the routers use a of their 4a units: the comparison "sparse beats dense
at equal activated units" when both learn their features. (Baykal et al.'s dense model of §5
is another one: a frozen random bottom layer with only the output layer fitted,
``routing.models.Dense``.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from routing.validation import check_instance, check_int
from routing.layers._base import (RouterLayer, check_layer_config, check_parameter_memory,
                                  uniform_fan_in_)

__all__ = ["DenseMLPConfig", "DenseMLP"]


@dataclass(frozen=True)
class DenseMLPConfig:
    """Settings of a ``DenseMLP``.

    Attributes:
        d_in, d_out: input and output sizes (>= 1).
        width: hidden units (>= 1), all active in every example.
        optimizer: "adam" (default, as the routers it is compared with) or "sgd".
        lr: learning rate > 0 (1e-3, Adam's usual rate, as COMET's, σ-MoE's and PKM's).
        seed: >= 0, seeds the initialisation: PyTorch's ``nn.Linear`` default,
            U(±1/√fan_in) for weights and biases (COMET §4 draws its backbone so too).

    Raises:
        ValueError: naming the parameter and its allowed range.
    """

    d_in: int
    width: int
    d_out: int = 1
    optimizer: str = "adam"
    lr: float = 1e-3
    seed: int = 0

    def __post_init__(self):
        check_layer_config(self)
        check_int(self.width, "width", 1)
        check_parameter_memory(self.width * (self.d_in + self.d_out + 1) + self.d_out,
                               {"d_in": self.d_in, "width": self.width, "d_out": self.d_out})


class DenseMLP(RouterLayer):
    """Dense two-layer ReLU MLP: x (B, d_in) -> (y (B, d_out), {}), every hidden unit active.

    Usage counts every hidden unit in every example (so its dead fraction is 0 and its usage
    balanced: the reference point of the routers' utilisation tables).

    Arguments:
        config: a ``DenseMLPConfig``.

    Attributes:
        config: the config.
        hidden: ``nn.Linear`` (d_in -> width), W1 and b1.
        out: ``nn.Linear`` (width -> d_out), W2 and b2.

    Raises:
        ParameterTypeError (a TypeError and a ValueError): if ``config`` is not a
            ``DenseMLPConfig``.
    """

    name = "dense_mlp"

    def __init__(self, config: DenseMLPConfig):
        check_instance(config, "config", DenseMLPConfig)
        super().__init__(config.width)
        self.config = config
        self.hidden = nn.Linear(config.d_in, config.width)
        self.out = nn.Linear(config.width, config.d_out)
        uniform_fan_in_((self.hidden, self.out), torch.Generator().manual_seed(config.seed))

    def _input_like(self) -> torch.Tensor:
        return self.hidden.weight

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """y = W2 ReLU(W1 x + b1) + b2 and no auxiliary loss.

        Arguments:
            x: (B, d_in) tensor of the parameters' dtype and device; B may be 0.

        Returns:
            (y (B, d_out), {}).

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite.
        """
        self.check_input(x)
        if self.track_usage:
            with torch.no_grad():
                self.unit_usage += x.shape[0]  # every unit takes part in every example
                self.examples_seen += x.shape[0]
        return self.check_output(self.out(torch.relu(self.hidden(x))), x), {}

    @property
    def activated_units(self) -> int:
        """All ``width`` hidden units."""
        return self.config.width

    @property
    def total_units(self) -> int:
        """``width``."""
        return self.config.width

    def flops_per_example(self) -> int:
        """2 × multiply-adds per example: 2·width·(d_in + d_out)."""
        c = self.config
        return 2 * c.width * (c.d_in + c.d_out)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "width": self.config.width}
