"""Softmax top-k MoE with the Switch Transformer's load-balancing loss (Fedus et al. 2022, as
reviewed by Csordás et al. 2023 §4, Eqs. 15-17).

    P = softmax(W3 x)                                    (the router distribution, over all E)
    E_x = the k experts with the highest P
    y = Σ_{e ∈ E_x} g[e] · W2_eᵀ ReLU(W1_eᵀ x),  g = P[E_x] (or P[E_x] / Σ P[E_x])
    L = E · Σ_e f[e] · P̄[e]

The softmax is taken *before* top-k, so at k = 1 the gate P[e] < 1 still carries the router's
gradient (renormalising after top-k would make it 1). f[e] is the fraction of the batch's
B·k assignments that go to e and P̄[e] the batch mean of P[e]; Eq. 15 counts f per token
(Σ f = k), we divide by k so that L = 1 under perfectly balanced routing for every k (the
two agree at Switch's k = 1). f is a count and carries no gradient; P̄ does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from routing.validation import check_bool, check_choice, check_instance, check_int, check_real
from routing.layers._base import check_layer_config, check_parameter_memory
from routing.layers._experts import INITS, ExpertMoE, topk_lowest_index

__all__ = ["TopKMoEConfig", "TopKMoE"]


@dataclass(frozen=True)
class TopKMoEConfig:
    """Settings of a ``TopKMoE`` layer; defaults follow the Switch Transformer (§4, App. B).

    Attributes:
        d_in, d_out: input and output sizes (>= 1).
        n_experts: E >= 1.
        expert_size: G >= 1, hidden units per expert.
        k: experts per example, 1 <= k <= n_experts (Switch: 1).
        renormalize: divide the k gates by their sum (Shazeer et al. 2017, App. A.1
            "norm topk"); default False, Switch's choice, since at k = 1 it fixes the gate at 1
            and leaves the router only the load-balancing gradient.
        load_balance_coef: >= 0, weight of the load-balancing loss (App. B: 0.01).
        init: "switch" (Fedus et al. 2022, §4), "sigma_moe" or "standard" (see ``ExpertBank``).
        optimizer: "adam" or "sgd".
        lr: learning rate > 0 (1e-3; see ``SigmaMoEConfig.lr``).
        seed: >= 0, seeds the initialisation.

    Raises:
        ValueError: naming the parameter and its allowed range.
    """

    d_in: int
    d_out: int = 1
    n_experts: int = 16
    expert_size: int = 128
    k: int = 1
    renormalize: bool = False
    load_balance_coef: float = 0.01
    init: str = "switch"
    optimizer: str = "adam"
    lr: float = 1e-3
    seed: int = 0

    def __post_init__(self):
        check_layer_config(self)
        check_int(self.n_experts, "n_experts", 1)
        check_int(self.expert_size, "expert_size", 1)
        check_int(self.k, "k", 1, self.n_experts)
        check_parameter_memory(
            self.n_experts * (self.d_in + self.expert_size * (self.d_in + self.d_out)),
            {"d_in": self.d_in, "d_out": self.d_out, "n_experts": self.n_experts,
             "expert_size": self.expert_size})
        check_bool(self.renormalize, "renormalize")
        check_real(self.load_balance_coef, "load_balance_coef", 0.0)
        check_choice(self.init, "init", INITS)


class TopKMoE(ExpertMoE):
    """Softmax top-k MoE: x (B, d_in) -> (y (B, d_out), {"load_balance": coef · L}).

    Usage counts the k selected experts of every example (``n_units`` = n_experts).

    Attributes:
        config: the ``TopKMoEConfig``.
        router: parameter W3 (n_experts, d_in).
        experts: ``ExpertBank`` with W1 (E, d_in, G) and W2 (E, G, d_out).

    Raises:
        ParameterTypeError (a TypeError and a ValueError): if ``config`` is not a
            ``TopKMoEConfig``.
    """

    name = "topk_moe"

    def __init__(self, config: TopKMoEConfig):
        check_instance(config, "config", TopKMoEConfig)
        super().__init__(config)

    def _select(self, logits: torch.Tensor,
                probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(idx (B, k) int64, gate (B, k)) from router logits and probabilities (B, E)."""
        _, idx = topk_lowest_index(logits, self.config.k)  # logits: no ties from underflow
        gate = probs.gather(1, idx)
        if self.config.renormalize:
            gate = gate / gate.sum(1, keepdim=True)
        return idx, gate

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The experts each example uses and their gates.

        Arguments:
            x: (B, d_in), the layer's dtype and device.

        Returns:
            (idx (B, k) int64, descending probability; gate (B, k), softmax(W3 x)[idx],
            renormalised to sum 1 per row when ``config.renormalize``).

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite.
        """
        self.check_input(x)
        logits = x @ self.router.T
        return self._select(logits, torch.softmax(logits, dim=1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """y = Σ_{e ∈ top-k} g[e] · expert_e(x) and the weighted load-balancing loss (on the
        CPU without renormalisation: one fused autograd node, ``_expert_kernel.moe_forward``).

        Arguments:
            x: (B, d_in), the layer's dtype and device; B may be 0.

        Returns:
            (y (B, d_out), {"load_balance": load_balance_coef · E · Σ_e f[e] P̄[e]}); L is
            1 for perfectly balanced routing, approaching E when (k = 1) one expert takes every
            example with probability near 1, and 0 for an empty batch.

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite (the fused kernel does not test
                it, so the check always runs).
        """
        self.check_input(x)
        if not self.config.renormalize:  # the CPU kernels' path
            fused = self._fused_forward(x, "softmax", "load_balance",
                                        self.config.load_balance_coef)
            if fused is not None:
                return self.check_output(fused[0], x), {"load_balance": fused[1]}
        return self._forward_torch(x)

    def _forward_torch(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``forward`` in torch operations around the expert bank (any device; renormalised
        gates, and the CPU reference of the fused kernel ``moe_forward``)."""
        logits = x @ self.router.T                                   # (B, E)
        probs = torch.softmax(logits, dim=1)
        idx, gate = self._select(logits, probs)                      # (B, k) each
        y = self.experts(x, idx, gate)                               # (B, d_out)
        self.record_usage(indices=idx)
        E, n = self.config.n_experts, max(len(x), 1)
        f = torch.bincount(idx.reshape(-1), minlength=E).to(probs.dtype) / (n * self.config.k)
        balance = E * (f * probs.sum(0) / n).sum()
        return self.check_output(y, x), {"load_balance": self.config.load_balance_coef * balance}
