"""σ-MoE (Csordás et al. 2023 §5): sigmoid expert scores, top-K experts, an entropy
regulariser on the batch's selection distribution, and expert dropout.

    s = σ(W3 x)                                   (Eq. 18, the scores)
    E_x = the K experts with the highest s         (dropped experts excluded in training)
    y = Σ_{e ∈ E_x} s[e] · W2_eᵀ ReLU(W1_eᵀ x)     (Eq. 11)
    L = Σ_e p[e] log p[e],  p = mean_batch softmax(W3 x)   (Eqs. 20-21)

L is the negative entropy of the batch-averaged softmax of the router logits (not of the
sigmoid scores), so minimising it spreads the selection over all experts.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from routing.validation import check_choice, check_instance, check_int, check_real
from routing.layers._base import check_layer_config, check_parameter_memory
from routing.layers._experts import INITS, ExpertMoE, topk_lowest_index

__all__ = ["SigmaMoEConfig", "SigmaMoE"]


@dataclass(frozen=True)
class SigmaMoEConfig:
    """Settings of a ``SigmaMoE`` layer; defaults from Csordás et al. 2023 (§5, Tab. 7).

    Attributes:
        d_in, d_out: input and output sizes (>= 1).
        n_experts: N_E >= 1 (Tab. 7: 16).
        expert_size: G >= 1, hidden units per expert (Tab. 7: 128).
        k: experts per example, 1 <= k <= n_experts (Tab. 7: 4).
        entropy_coef: γ >= 0, weight of the entropy regulariser (Tab. 7: 0.001).
        expert_dropout: δ in [0, 1), probability of dropping an expert for one example in
            training (Tab. 7: 0 for N_E = 16; 0.05 and 0.2 for the larger models).
        init: "sigma_moe" (§5, the paper's), "standard" or "switch" (see ``ExpertBank``).
        optimizer: "adam" (App. B) or "sgd".
        lr: learning rate > 0. App. B uses 2.5e-4 for 100k steps of language modelling; our
            regressions train for a few thousand steps, hence Adam's usual 1e-3.
        seed: >= 0, seeds the initialisation and the expert-dropout draws.

    Raises:
        ValueError: naming the parameter and its allowed range.
    """

    d_in: int
    d_out: int = 1
    n_experts: int = 16
    expert_size: int = 128
    k: int = 4
    entropy_coef: float = 0.001
    expert_dropout: float = 0.0
    init: str = "sigma_moe"
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
        check_real(self.entropy_coef, "entropy_coef", 0.0)
        check_real(self.expert_dropout, "expert_dropout", 0.0, 1.0, high_open=True)
        check_choice(self.init, "init", INITS)


class SigmaMoE(ExpertMoE):
    """σ-MoE layer (Csordás et al. 2023 §5): x (B, d_in) -> (y (B, d_out), {"entropy": γ·L}).

    Usage counts the K selected experts of every example (``n_units`` = n_experts); with
    expert dropout, only those kept (Eq. 22: a dropped expert that fills a slot because fewer
    than K survived has gate 0 and is not counted).
    Expert dropout (Eq. 22) is drawn per example and expert, in training mode only, from a
    CPU ``torch.Generator`` seeded with ``config.seed`` (which first draws the
    initialisation), so equal seeds give equal numbers on CPU and CUDA; the generator's state
    is not part of ``state_dict``.

    Attributes:
        config: the ``SigmaMoEConfig``.
        router: parameter W3 (n_experts, d_in).
        experts: ``ExpertBank`` with W1 (E, d_in, G) and W2 (E, G, d_out).

    Raises:
        ParameterTypeError (a TypeError and a ValueError): if ``config`` is not a
            ``SigmaMoEConfig``.
    """

    name = "sigma_moe"

    def __init__(self, config: SigmaMoEConfig):
        check_instance(config, "config", SigmaMoEConfig)
        super().__init__(config)

    def _select(self, logits: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(idx (B, K) int64, gate (B, K), kept (B, K) bool or None) from router logits
        (B, E); kept marks the selected experts that survived expert dropout (None without
        dropout: all)."""
        if not (self.training and self.config.expert_dropout > 0):
            _, idx = topk_lowest_index(logits, self.config.k)     # σ is monotone
            return idx, torch.sigmoid(logits.gather(1, idx)), None
        keep = torch.rand(logits.shape, generator=self.generator) >= self.config.expert_dropout
        keep = keep.to(logits.device)                               # (B, E), P(keep) = 1 - δ
        _, idx = topk_lowest_index(logits.masked_fill(~keep, float("-inf")), self.config.k)
        kept = keep.gather(1, idx)                                  # (B, K)
        # Eq. 22 multiplies the scores by the mask without rescaling: a dropped expert only
        # wins when fewer than K survive, and then it contributes nothing.
        return idx, torch.sigmoid(logits.gather(1, idx)) * kept.to(logits.dtype), kept

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The experts each example uses and their weights (draws expert dropout in training).

        Arguments:
            x: (B, d_in), the layer's dtype and device.

        Returns:
            (idx (B, K) int64, descending score; gate (B, K) = σ(W3 x)[idx], 0 for dropped).

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite.
        """
        self.check_input(x)
        return self._select(x @ self.router.T)[:2]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """y = Σ_{e ∈ top-K} σ(W3 x)[e] · expert_e(x) and the weighted entropy loss (on the
        CPU without expert dropout: one fused autograd node, ``_expert_kernel.moe_forward``).

        Arguments:
            x: (B, d_in), the layer's dtype and device; B may be 0.

        Returns:
            (y (B, d_out), {"entropy": entropy_coef · Σ_e p[e] log p[e]}), the loss a scalar
            in [-entropy_coef·log E, 0] (0 for an empty batch).

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite (the fused kernel does not test
                it, so the check always runs).
        """
        self.check_input(x)
        if not (self.training and self.config.expert_dropout > 0):  # the CPU kernels' path
            fused = self._fused_forward(x, "sigmoid", "entropy", self.config.entropy_coef)
            if fused is not None:
                return self.check_output(fused[0], x), {"entropy": fused[1]}
        return self._forward_torch(x)

    def _forward_torch(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``forward`` in torch operations around the expert bank (any device; expert
        dropout, and the CPU reference of the fused kernel ``moe_forward``)."""
        logits = x @ self.router.T                                    # (B, E)
        idx, gate, kept = self._select(logits)                        # (B, K) each
        y = self.experts(x, idx, gate)                                # (B, d_out)
        if kept is None:
            self.record_usage(indices=idx)
        else:  # only the kept experts are selected (Eq. 22)
            self.record_usage(weights=torch.zeros_like(logits).scatter_(
                1, idx, kept.to(logits.dtype)))
        p = torch.softmax(logits, dim=1).sum(0) / max(len(x), 1)      # (E,)
        # Σ p log p with 0 log 0 = 0, and the gradient log p + 1 with log 0 taken as 0, as the
        # fused kernel's ``_aux_loss``: xlogy(p, p)'s backward is 0/0 = NaN at p = 0 (a
        # saturated router's softmax underflows), and p - p.detach() adds exactly 0 to the
        # value and 1 to the gradient
        with torch.no_grad():
            log_p = torch.where(p > 0, p, torch.ones_like(p)).log()
        neg_entropy = (p * log_p).sum() + (p - p.detach()).sum()
        return self.check_output(y, x), {"entropy": self.config.entropy_coef * neg_entropy}
