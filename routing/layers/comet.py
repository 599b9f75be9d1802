"""COMET: an MLP whose hidden neurons are gated by a fixed random routing network with
k-winner-take-all masks (Conditionally Overlapping Mixture of ExperTs).

The routing network has the backbone's shape, random weights V_ℓ that are never trained, no
biases and the identity activation g. For an input x_0 it computes, for each hidden layer
ℓ = 1..L−1 (COMET §4, Eqs. 4–6)::

    c_ℓ = V_ℓ z_{ℓ−1}            z_0 = x_0
    m_ℓ = C_{k_ℓ}(c_ℓ)           exactly k_ℓ ones: the k_ℓ largest scores, ties by lowest index
    z_ℓ = m_ℓ ∘ c_ℓ              (g = identity, as in the paper's experiments)

and the backbone applies the masks (Eqs. 7–8)::

    a_ℓ = W_ℓ x_{ℓ−1} + b_ℓ,     x_ℓ = m_ℓ ∘ f(a_ℓ)

with an unmasked output layer y = a_L = W_L x_{L−1} + b_L. The routing network only ever sees
its own activations z, never the backbone's x (COMET §4, point 2): an example's masks are a
fixed function of the example, unchanged by training.

Choices the paper leaves open, made here:
    * k_ℓ = p_k N_ℓ rounded to the nearest integer (halves up), at least 1: the paper writes
      k_ℓ = p_k N_ℓ; the nearest integer keeps the realised fraction closest to p_k (0.1·512
      gives 51, not 52), and k_ℓ ≥ 1 because a layer with no winner outputs zeros.
    * Eq. 7 drops the bias b_ℓ of Eq. 1; ``bias=True`` keeps it (the MLP of Eq. 1, whose
      parameters θ include b_ℓ in §5.1.1; without biases y(αx) = α y(x), see
      ``COMETConfig.bias``); ``bias=False`` is Eq. 7 to the letter (used by the §5.1.1
      similarity study).
    * V_ℓ, W_ℓ and b_ℓ are drawn from U(−N_{ℓ−1}^{−1/2}, N_{ℓ−1}^{−1/2}), the paper's
      distribution for both networks (§4), which is also PyTorch's default nn.Linear
      initialisation; here it is drawn from two torch.Generators (routing, backbone) spawned
      from ``config.seed``, so the masks depend on the seed and shapes only, never on global
      RNG state, ``bias`` or ``d_out``.

Source: Anonymous, "More Experts Than Galaxies: Conditionally-Overlapping Experts with
Biologically-Inspired Fixed Routing" (COMET), §4 Eqs. 1–8, App. A.7 (routing network of the
backbone's shape).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from routing.validation import (check_bool, check_choice, check_finite_tensor, check_instance,
                                check_int, check_real)
from routing.layers._base import (RouterLayer, check_layer_config, check_parameter_memory,
                                  uniform_fan_in_)
from routing.layers._unit_kernel import routed_unit_mlp
from routing.torch_twins import topk_mask

__all__ = ["COMETConfig", "COMET", "ACTIVATIONS", "k_winners"]

ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh, "identity": lambda a: a}


def k_winners(p_k: float, width: int) -> int:
    """Winners per row of a layer of ``width`` neurons: round(p_k · width), halves up, in
    1..width (the module docstring says why)."""
    return max(1, min(width, math.floor(p_k * width + 0.5)))


@dataclass(frozen=True)
class COMETConfig:
    """Shape, sparsity and training defaults of a COMET MLP.

    Attributes:
        d_in: input dimension N_0 (>= 1).
        widths: hidden widths (N_1, …, N_{L−1}), at least one layer, each >= 1.
        d_out: output dimension N_L (>= 1); the output layer is never masked.
        p_k: fraction of winners per hidden layer, in (0, 1]; k_ℓ = round(p_k N_ℓ) >= 1.
            p_k = 1 is the plain MLP. Default 0.5, the paper's most used value: its ViT and
            MLP-Mixer layers (§5.2.2), the GPT-2 runs ("50% sparsity level", App. A.4.2), the
            activation study ("a sparsity level of 0.5", App. A.6), and the middle of the
            {0.1, 0.5, 0.9} swept in the MLP experiments (App. A.1, A.2, A.5). (The paper's
            "sparsity level" is p_k in Fig. 1 and 1 − p_k in §5.1.2; at 0.5 they agree.)
        activation: backbone activation f, one of ``ACTIVATIONS``: "relu" (default), "tanh"
            or "identity". ReLU is our choice, not the paper's: it never names the
            activation of its MLP experiments (App. A.1, A.2, A.5); its ViT/MLP-Mixer and
            GPT-2 runs use tanh on the backbone (App. A.3, A.4.1); and its activation study
            (App. A.6: 4-layer MLP, CIFAR10, p_k = 0.5, 3000 neurons a layer) found COMET
            ahead of the dense MLP with most activations but behind it with the
            non-monotonic GELU, Mish and SiLU. ReLU is monotonic, and only a one-hidden-layer
            ReLU network runs the winners-only CPU kernel (``forward``).
        bias: backbone biases b_ℓ (default True), which Eq. 7 drops from Eq. 1; False follows
            Eq. 7 literally. Kept because the paper's backbone is the MLP of Eq. 1, with
            "learnable parameters comprising a weight matrix W_ℓ and bias b_ℓ" (§4) and θ
            including every b_ℓ (§5.1.1); and because without biases the network is
            positively homogeneous: the masks depend on x's direction only, y(0) = 0, and a
            ReLU or identity backbone gives y(αx) = α y(x) for α > 0, so it cannot fit a
            regression target with f(0) ≠ 0 or one that is not homogeneous.
        optimizer: "adam" or "sgd", read by the trainer. The paper's MLP experiments use
            plain SGD (A.1, A.2, A.5; SGD with momentum in A.6); its ViT/MLP-Mixer runs use
            Adam (A.3) and its GPT-2 runs AdamW (A.4.1). Adam is our default because at our
            budget SGD at the paper's rates falls far behind (measured on the ``routers``
            quick preset when it trained 1500 steps: polynomial target, batch 1024, eval MSE / target
            variance at widths 64/256/1024: Adam lr 1e-3 0.28/0.15/0.078; SGD lr 1e-2, A.5's
            rate, 0.72/0.52/0.34; SGD lr 1e-1 0.32/0.26/0.18).
        lr: learning rate, > 0. Default 1e-3 for Adam (above): also the paper's MLP-Mixer
            Adam rate (A.3) and the rate of its second CIFAR10 MLP runs (A.2, with SGD). The
            paper's SGD rates are 1e-4 (A.1, 100 epochs of CIFAR10), 1e-3 (A.2, A.6) and 1e-2
            (A.5, SARCOS regression, 50 epochs).
        seed: non-negative seed of V_ℓ, W_ℓ and b_ℓ.

    Raises:
        ValueError: naming the parameter and its allowed range when a value is outside it.
    """

    d_in: int
    widths: tuple[int, ...]
    d_out: int = 1
    p_k: float = 0.5
    activation: str = "relu"
    bias: bool = True
    optimizer: str = "adam"
    lr: float = 1e-3
    seed: int = 0

    def __post_init__(self):
        check_layer_config(self)
        widths = tuple(self.widths) if isinstance(self.widths, (tuple, list)) else None
        if not widths:
            raise ValueError(f"widths must be a non-empty tuple of integers >= 1, "
                             f"got {self.widths!r}")
        for i, width in enumerate(widths):
            check_int(width, f"widths[{i}]", 1)
        object.__setattr__(self, "widths", widths)
        sizes = (self.d_in, *widths, self.d_out)
        check_parameter_memory(sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:])),
                               {"d_in": self.d_in, "d_out": self.d_out,
                                **{f"widths[{i}]": w for i, w in enumerate(widths)}})
        check_real(self.p_k, "p_k", 0.0, 1.0, low_open=True)
        check_choice(self.activation, "activation", ACTIVATIONS)
        check_bool(self.bias, "bias")

    @property
    def ks(self) -> tuple[int, ...]:
        """Winners k_ℓ of each hidden layer."""
        return tuple(k_winners(self.p_k, n) for n in self.widths)


class COMET(RouterLayer):
    """COMET MLP: ``forward(x) -> (y, {})`` with fixed random k-WTA routing (COMET §4).

    Usage counts every hidden neuron of every layer in one buffer of ΣN_ℓ units: layer ℓ
    occupies ``offsets[ℓ] .. offsets[ℓ] + N_ℓ − 1`` (0-based ℓ); a neuron counts as used in an
    example when its mask bit is 1 (whatever the sign of f(a)).

    Arguments:
        config: a ``COMETConfig``.

    Attributes:
        config: the config.
        ks: (k_1, …, k_{L−1}) winners per hidden layer.
        offsets: first usage index of each hidden layer.
        backbone: ``nn.ModuleList`` of L ``nn.Linear`` (trainable W_ℓ, b_ℓ).
        V1, V2, …: buffers (N_ℓ, N_{ℓ−1}), the frozen routing weights (``routing_weights``).

    Raises:
        ParameterTypeError (a TypeError and a ValueError): if ``config`` is not a
            ``COMETConfig``.

    Parameters are float32; ``.double()`` converts the routing buffers too (not the usage
    counters, which stay float64).
    """

    name = "comet"

    def __init__(self, config: COMETConfig):
        check_instance(config, "config", COMETConfig)
        super().__init__(sum(config.widths))
        self.config = config
        self.ks = config.ks
        self.offsets = tuple(int(o) for o in np.cumsum((0,) + config.widths[:-1]))
        self._f = ACTIVATIONS[config.activation]
        routing_gen, backbone_gen = _generators(config.seed)
        hidden = (config.d_in,) + config.widths
        for ell, (n_prev, n) in enumerate(zip(hidden[:-1], hidden[1:]), start=1):
            bound = n_prev ** -0.5
            self.register_buffer(f"V{ell}", torch.empty(n, n_prev).uniform_(
                -bound, bound, generator=routing_gen))
        sizes = hidden + (config.d_out,)
        # skip_init: nn.Linear's own initialisation would consume the global RNG
        self.backbone = nn.ModuleList(
            nn.utils.skip_init(nn.Linear, n_prev, n, bias=config.bias)
            for n_prev, n in zip(sizes[:-1], sizes[1:]))
        uniform_fan_in_(self.backbone, backbone_gen)

    # -- routing and backbone ---------------------------------------------------------------
    @property
    def routing_weights(self) -> list[torch.Tensor]:
        """[V_1, …, V_{L−1}], V_ℓ of shape (N_ℓ, N_{ℓ−1}) (buffers, never trained)."""
        return [getattr(self, f"V{ell}") for ell in range(1, len(self.ks) + 1)]

    @torch.no_grad()
    def masks(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Routing masks m_1, …, m_{L−1} (Eqs. 4–6); usage is not counted.

        Arguments:
            x: (B, d_in) floating tensor of the parameters' dtype and device.

        Returns:
            list of (B, N_ℓ) bool tensors, exactly k_ℓ True per row.

        Raises:
            ValueError: as ``forward``.
        """
        return self._route(self.check_input(x))

    def hidden_activations(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Masked backbone activations x_1, …, x_{L−1} (Eq. 8); usage is not counted.

        Arguments:
            x: (B, d_in) floating tensor of the parameters' dtype and device.

        Returns:
            list of (B, N_ℓ) tensors in the parameters' dtype (zero outside the mask).

        Raises:
            ValueError: as ``forward``.
        """
        x = self.check_input(x)
        return self._backbone(x, self._route(x))[1]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """y = a_L of the masked backbone (Eqs. 4–8) and no auxiliary loss.

        On the CPU, a network with one ReLU hidden layer in float32/float64 runs the
        winners-only Numba kernels (``_forward_gathered``: O(k·d) per example instead of
        O(width·d)); every other case runs the masked matmuls. Both give the same masks (up to
        near-ties at the k-th score, summed in another order) and y up to rounding.

        Arguments:
            x: (B, d_in) floating tensor of the parameters' dtype and device; B may be 0.

        Returns:
            (y, {}) with y of shape (B, d_out) in the parameters' dtype.

        Raises:
            ValueError: naming ``x`` (``RouterLayer.check_input``) if it is not a 2-D tensor
                with d_in columns of the parameters' dtype and device, or has NaN or infinite
                entries; naming ``x`` too if it is finite but so large that the routing scores
                overflow (``_routing_error``).
        """
        x = self.check_input(x, finite=False)
        if self._gather_path(x):  # the kernel tells a non-finite x (its scores are not finite)
            return self.check_output(self._forward_gathered(x), x), {}
        check_finite_tensor(x, "x")
        masks = self._route(x)
        y, _ = self._backbone(x, masks)
        for ell, m in enumerate(masks):
            self.record_usage(weights=m, offset=self.offsets[ell], count_examples=ell == 0)
        return self.check_output(y, x), {}

    def _gather_path(self, x: torch.Tensor) -> bool:
        """Whether ``forward`` runs the winners-only CPU kernels: one hidden ReLU layer,
        float32/float64 on the CPU (deeper networks and other activations take the masked
        matmuls)."""
        return (x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)
                and len(self.ks) == 1 and self.config.activation == "relu")

    def _forward_gathered(self, x: torch.Tensor) -> torch.Tensor:
        """``forward`` of a one-hidden-layer ReLU COMET touching each example's k winners only
        (``_unit_kernel``): the masks of ``masks`` (same tie rule; the routing scores are sums
        in another order, so a near-tie at the k-th score may fall the other way) and y equal
        up to the order of the floating-point sums."""
        hidden, out = self.backbone
        usage = self.unit_usage if self.track_usage else None  # counted by the kernel
        # the winners of V_1 x (Eqs. 4-5) and the backbone at them (Eqs. 7-8)
        try:
            y, _ = routed_unit_mlp(x, self.V1, self.ks[0], hidden.weight, hidden.bias,
                                   out.weight, out.bias, usage=usage, winners=False)
        except ValueError:  # name x whether it is not finite or its scores overflowed
            check_finite_tensor(x, "x")
            if not bool(torch.isfinite(x @ self.V1.T).all()):
                raise self._routing_error(1, x) from None
            raise
        if usage is not None:
            self.examples_seen += x.shape[0]
        return y

    @torch.no_grad()
    def _route(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Masks of a checked, finite x (Eqs. 4-6).

        Raises:
            ValueError: if the routing scores of a layer are not finite (``_routing_error``):
                ties among ±inf would decide the winners, and inf reaches the next layer.
        """
        z, masks = x, []
        for ell, (V, k) in enumerate(zip(self.routing_weights, self.ks), start=1):
            c = z @ V.T  # (B, N_ℓ), Eq. 4
            try:
                check_finite_tensor(c, "c")
            except ValueError:
                raise self._routing_error(ell, x) from None
            m = topk_mask(c, k)  # (B, N_ℓ) bool, Eq. 5 (exactly k, ties by lowest index)
            # Eq. 6 with g = identity; not c * m, whose masked-out ±inf would be inf·0 = NaN
            z = torch.where(m, c, 0)
            masks.append(m)
        return masks

    def _backbone(self, x: torch.Tensor, masks: list[torch.Tensor]):
        hidden = []
        for linear, m in zip(self.backbone[:-1], masks):
            x = m * self._f(linear(x))  # (B, N_ℓ), Eqs. 7–8
            hidden.append(x)
        return self.backbone[-1](x), hidden  # output a_L, not masked

    def _input_like(self) -> torch.Tensor:
        return self.backbone[0].weight

    def _routing_error(self, ell: int, x: torch.Tensor) -> ValueError:
        """The error for non-finite routing scores c_ℓ (Eq. 4) of a finite x: overflow, or
        non-finite routing weights V_ℓ."""
        V = self.routing_weights[ell - 1]
        if not bool(torch.isfinite(V).all()):
            return ValueError(f"the routing weights V{ell} must be finite; they have NaN or "
                              f"infinite entries")
        return ValueError(f"x must be small enough for the routing scores: c_{ell} = V_{ell} "
                          f"z_{ell - 1} overflowed to inf or NaN in {x.dtype} for this x "
                          f"(finite, max |x| = {float(x.abs().max()):.3g}); scale x down or "
                          f"use float64")

    # -- sizes and costs --------------------------------------------------------------------
    @property
    def activated_units(self) -> int:
        """Σ k_ℓ: hidden neurons that take part in one example."""
        return sum(self.ks)

    @property
    def total_units(self) -> int:
        """Σ N_ℓ over the hidden layers."""
        return sum(self.config.widths)

    def flops_per_example(self, dense: bool = False) -> int:
        """2 × multiply-adds per example, routing network included.

        Arguments:
            dense: False (default): a mask-aware execution, the cost comparable with MoE
                layers that compute only their chosen experts: backbone layer ℓ computes its
                k_ℓ winners from the k_{ℓ−1} nonzero inputs (k_0 = d_in), the output layer
                reads k_{L−1} inputs, and the routing network computes all N_ℓ scores from
                the k_{ℓ−1} nonzero z_{ℓ−1}. True: the dense matmuls ``forward`` actually runs
                (the paper's implementation, App. A.8), 2·ΣN_{ℓ−1}N_ℓ for each network
                (without the routing network's unused output layer).

        Biases, activations and the top-k selection are not multiply-adds and are not counted.

        Raises:
            ValueError: if ``dense`` is not a bool.
        """
        dense = check_bool(dense, "dense")
        cfg = self.config
        n_in = (cfg.d_in,) + cfg.widths  # N_0 … N_{L−1}
        if dense:
            routing = sum(a * b for a, b in zip(n_in[:-1], cfg.widths))
            backbone = routing + n_in[-1] * cfg.d_out
        else:
            k_in = (cfg.d_in,) + self.ks  # nonzero inputs of each layer
            routing = sum(a * b for a, b in zip(k_in[:-1], cfg.widths))
            backbone = sum(a * b for a, b in zip(k_in[:-1], self.ks)) + k_in[-1] * cfg.d_out
        return 2 * (routing + backbone)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "p_k": self.config.p_k, "k": list(self.ks),
                "widths": list(self.config.widths)}

    def extra_repr(self) -> str:
        return f"p_k={self.config.p_k}, k={self.ks}, activation={self.config.activation}"


def _generators(seed: int) -> tuple[torch.Generator, torch.Generator]:
    """Independent (routing, backbone) generators from one seed."""
    states = [s.generate_state(1, np.uint64)[0] for s in np.random.SeedSequence(seed).spawn(2)]
    return tuple(torch.Generator().manual_seed(int(s)) for s in states)
