"""SMEAR: one merged expert per example, its parameters averaged under the router's
probabilities (Muqeeth et al. 2024, "Soft Merging of Experts with Adaptive Routing", §3).

The block has E two-layer experts f(u; θ_e) = W2_e σ(W1_e u + b1_e) + b2_e, all of one shape,
and a linear router R(v) = softmax(W_r v). SMEAR never runs the experts themselves: it builds
θ̄ = Σ_e R(v)_e θ_e and returns f̄(u; θ̄) (§3, "Merging Experts"). Everything is differentiable,
so the router learns from the task loss alone, with no gradient estimator and no auxiliary
loss (the paper drops load balancing, §4.1).

In our block the router and the expert see the same x (the paper averages a sequence's hidden
states for v, §4.1; a regression example is a single vector, L = 1). With L = 1 the §3 cost
(L·4 + N·2)·d·m is dominated by the merge, so SMEAR costs about as much as running every
expert ("ensemble routing"); ``cost()`` reports both the paper's formula and our count.

Choices the paper leaves open or that we change, each a config field:
  * experts have biases on both layers (``bias``; the paper's adapters are Linear layers);
  * the non-linearity is swish/SiLU as in the paper's adapters (App. B.1, B.2);
  * the router is a bias-free d_in × E matrix (§4.1). The paper also layer-normalises the
    router input and the router's rows "to help avoid saturating the softmax" (§4.1); we
    leave that out: with d_in = 8 the layer norm would hide the input's mean and scale from
    the router;
  * initialisation: PyTorch's ``nn.Linear`` rule, U(±1/√fan_in), independently per expert
    ("all experts are randomly initialized with different parameter values", §3), not the
    adapters' near-zero N(0, 0.01²), which suits a residual adapter, not a layer trained from
    scratch;
  * expert dropout (Liu et al. 2022b; used for SMEAR in the main T5-GLUE results, App. C):
    in training each (example, expert) probability is zeroed with probability
    ``expert_dropout`` and the rest renormalised (as in the authors' code). Off by default.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from routing.validation import check_bool, check_choice, check_instance, check_int, check_real
from ._base import RouterLayer, check_layer_config, check_parameter_memory

__all__ = ["SMEARConfig", "SMEAR"]

_ACTIVATIONS = {"silu": F.silu, "relu": F.relu, "gelu": F.gelu}


@dataclass(frozen=True)
class SMEARConfig:
    """Settings of a :class:`SMEAR` layer.

    Attributes:
        d_in: input width (>= 1).
        d_out: output width (>= 1).
        n_experts: number of experts E (>= 1).
        expert_size: hidden width G of each expert (>= 1).
        activation: "silu" (the paper's swish, App. B), "relu" or "gelu".
        bias: experts have biases b1 (G,) and b2 (d_out,).
        expert_dropout: probability in [0, 1) of dropping an expert for one training example
            (App. C); 0 disables it.
        optimizer: "adam" (App. B.2 trains with Adam) or "sgd".
        lr: learning rate (> 0); 1e-3 as in App. B.2.
        seed: seed (>= 0) of the initialisation and of expert dropout.

    Raises:
        ValueError: naming the field and its allowed range when a value is outside it.
    """

    d_in: int
    d_out: int = 1
    n_experts: int = 8
    expert_size: int = 32
    activation: str = "silu"
    bias: bool = True
    expert_dropout: float = 0.0
    optimizer: str = "adam"
    lr: float = 1e-3
    seed: int = 0

    def __post_init__(self):
        check_layer_config(self)
        check_int(self.n_experts, "n_experts", 1)
        check_int(self.expert_size, "expert_size", 1)
        check_parameter_memory(  # router, the experts' weights and biases, and their merge
            (self.n_experts + 1) * (self.expert_size * (self.d_in + self.d_out + 1) + self.d_out)
            + self.n_experts * self.d_in,
            {"d_in": self.d_in, "d_out": self.d_out, "n_experts": self.n_experts,
             "expert_size": self.expert_size})
        check_choice(self.activation, "activation", _ACTIVATIONS)
        check_bool(self.bias, "bias")
        check_real(self.expert_dropout, "expert_dropout", 0.0, 1.0, high_open=True)


def _mix_linear(p: torch.Tensor, u: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """u_b @ (Σ_e p_be W_e) for every example b, without a (B, E, a, c) tensor.

    p (B, E), u (B, a), weight (E, a, c) -> (B, c). Both routes below cost B·E·a·c
    multiply-adds; they differ in the intermediate they hold: the merged weights (B, a·c), as
    the paper's torch.bmm does (App. B), or the scaled inputs (B, E·a). Take the smaller.
    """
    B, (E, a, c) = p.shape[0], weight.shape
    if c <= E:
        merged = (p @ weight.reshape(E, a * c)).reshape(B, a, c)  # (B, a, c)
        return torch.bmm(u.unsqueeze(1), merged).squeeze(1)
    scaled = (p.unsqueeze(2) * u.unsqueeze(1)).reshape(B, E * a)  # (B, E·a)
    return scaled @ weight.reshape(E * a, c)


class SMEAR(RouterLayer):
    """Soft merging of experts (Muqeeth et al. 2024, §3): y = f̄(x; Σ_e p_e(x) θ_e).

    ``forward(x)`` maps x (B, d_in) to ``(y, {})`` with y (B, d_out), in the parameters' dtype
    and device. Usage counts each expert with its router probability (``record_usage(
    weights=p)``), so the usage of one example sums to 1.

    Parameters (float32 at construction):
        router: (d_in, E). w1: (E, d_in, G), b1: (E, G), w2: (E, G, d_out), b2: (E, d_out)
        (b1, b2 only when ``config.bias``).

    Raises:
        ParameterTypeError (a TypeError and a ValueError): if ``config`` is not an
            ``SMEARConfig``.
        ValueError: from the config; ``forward`` and ``router_probs`` naming x when it is not
            a finite (B, d_in) tensor of the parameters' dtype and device.
    """

    name = "smear"

    def __init__(self, config: SMEARConfig):
        check_instance(config, "config", SMEARConfig)
        super().__init__(config.n_experts)
        self.config = config
        E, G, d_in, d_out = config.n_experts, config.expert_size, config.d_in, config.d_out
        gen = torch.Generator().manual_seed(config.seed)

        def uniform(shape, fan_in):
            bound = fan_in ** -0.5
            return nn.Parameter((2 * torch.rand(shape, generator=gen) - 1) * bound)

        self.router = uniform((d_in, E), d_in)
        self.w1 = uniform((E, d_in, G), d_in)
        self.b1 = uniform((E, G), d_in) if config.bias else None
        self.w2 = uniform((E, G, d_out), G)
        self.b2 = uniform((E, d_out), G) if config.bias else None
        self._act = _ACTIVATIONS[config.activation]
        self._dropout_gen = torch.Generator().manual_seed(config.seed + 1)

    def _input_like(self) -> torch.Tensor:
        return self.router

    def router_probs(self, x: torch.Tensor) -> torch.Tensor:
        """Router distribution softmax(x W_r) (§3): x (B, d_in) -> (B, E), rows summing to 1
        (before expert dropout), in the parameters' dtype.

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite.
        """
        return torch.softmax(self.check_input(x) @ self.router, dim=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """x (B, d_in) -> (y (B, d_out), {}); see the class docstring.

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite.
        """
        p = self.router_probs(x)  # (B, E)
        if self.training and self.config.expert_dropout > 0:
            p = self._drop_experts(p)
        self.record_usage(weights=p)
        h = _mix_linear(p, x, self.w1)  # (B, G)
        if self.b1 is not None:
            h = h + p @ self.b1
        y = _mix_linear(p, self._act(h), self.w2)  # (B, d_out)
        if self.b2 is not None:
            y = y + p @ self.b2
        return self.check_output(y, x), {}

    def _drop_experts(self, p: torch.Tensor) -> torch.Tensor:
        # Sampled on the CPU generator so that a seed gives the same masks on every device.
        keep = torch.rand(p.shape, generator=self._dropout_gen) >= self.config.expert_dropout
        p = p * keep.to(device=p.device, dtype=p.dtype)
        total = p.sum(dim=1, keepdim=True)  # (B, 1)
        # An example that lost every expert gets the uniform average instead of 0/0 (and only
        # such an example: a NaN from the router stays NaN, for ``check_output`` to report).
        uniform = torch.full_like(p, 1.0 / p.shape[1])
        return torch.where(total == 0, uniform, p / total.clamp_min(torch.finfo(p.dtype).tiny))

    # -- sizes and costs ----------------------------------------------------------------
    def expert_params(self) -> int:
        """Parameters of one expert: d_in·G + G·d_out, plus G + d_out with biases."""
        c = self.config
        return c.expert_size * (c.d_in + c.d_out) + (c.expert_size + c.d_out) * c.bias

    def cost(self) -> dict[str, int]:
        """FLOPs per example (Muqeeth et al. 2024, §3, "Computational Costs").

        Returns:
            ``router``: 2·d_in·E (the logits); ``merge``: 2·E·P, P = ``expert_params()`` (a
            multiply-add per parameter per expert); ``expert``: 2·G·(d_in + d_out) (one
            expert's forward; bias adds and σ ignored as in §3); ``total``: their sum, what
            ``flops_per_example`` returns; ``paper_formula``: the paper's (L·4 + N·2)·d·m with
            L = 1, N = E, m = G and d·m generalised to one expert's weights G·(d_in + d_out)/2
            per layer, i.e. 2·G·(d_in + d_out) + E·G·(d_in + d_out). The paper charges the
            merge one FLOP per weight per expert, half of our multiply-add count.
        """
        c = self.config
        weights = c.expert_size * (c.d_in + c.d_out)
        parts = {"router": 2 * c.d_in * c.n_experts,
                 "merge": 2 * c.n_experts * self.expert_params(),
                 "expert": 2 * weights}
        parts["total"] = sum(parts.values())
        parts["paper_formula"] = 2 * weights + c.n_experts * weights
        return parts

    def flops_per_example(self) -> int:
        """``cost()["total"]``: router + merge + one expert's forward, multiply-adds × 2."""
        return self.cost()["total"]

    @property
    def activated_units(self) -> int:
        """G: one merged expert runs per example."""
        return self.config.expert_size

    @property
    def total_units(self) -> int:
        """E·G."""
        return self.config.n_experts * self.config.expert_size
