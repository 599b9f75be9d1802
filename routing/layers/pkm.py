"""Product-key memory (Lample et al. 2019; Csordás et al. 2023 §3.2, §6.2, App. A.3).

The query q is split into halves q_a | q_b, each scored against its own table of n_keys
sub-keys: u_a = K_a q_a, u_b = K_b q_b. By default q = x (d_in even): Csordás et al. App. A.3
"directly divide the input vectors into two sub-keys without an additional projection";
``project_query=True`` restores Lample et al.'s learned projection q = W_q x (any d_in, an
even d_key).

Value slot i of the n_keys² slots has score u[i] = u_b[i // n_keys] + u_a[i mod n_keys]
(Eq. 8). Taking the top K of each half first leaves K² candidate sums that are guaranteed to
contain the top K of all n_keys² scores. With both halves sorted, the pair of ranks (i, j)
(from 0) is beaten by all (i+1)(j+1) - 1 pairs of lower ranks on both sides, so only the
≈ K ln K pairs with (i+1)(j+1) <= K can be in the top K; only those are summed and sorted
(K = 32: 119 instead of 1024; 5x faster on CPU).
The output is y = Σ_{top K} act(u[i]) · v_i, act = ReLU (the paper's choice, §6.2) or a
softmax over the K scores (Lample et al.'s original).

Small key tables. When n_keys <= K, the reference code of Csordás et al. (``layers/
lowrank_approximate_2layer.py``: ``no_knn = all(k <= knn for k in key_sizes)``, then
``forward_dense``) skips Top-K altogether and reads all n_keys² slots densely,
y = Σ_i act(u[i]) · v_i (act applied to all n_keys² scores). This layer keeps the top K of
the n_keys² slots by default (K of them, the layer's nominal sparsity, whatever n_keys);
``PKMConfig.dense_small_keys=True`` gives the reference's behaviour — the regime where every
``routers`` sweep shape of sparselab lies (n_keys <= K), in which the reference PKM is dense.

On the CPU (float32/float64) ``forward`` runs the whole layer as one autograd node
(``_pkm_kernel.pkm_forward``): the same K slots, found by a threshold on the candidate sums
(the ordered merge only where ties sit at the K-th place), forward and backward in Numba.
``route`` keeps the ordered selection; other devices run the torch operations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from routing.validation import (check_bool, check_choice, check_finite_tensor, check_instance,
                                check_int)
from routing.layers._base import RouterLayer, check_layer_config, check_parameter_memory
from routing.layers._experts import _cpu_kernel_dtype, topk_lowest_index
from routing.layers._pkm_kernel import MAX_FUSED_KEYS, pkm_forward, pkm_select

__all__ = ["PKMConfig", "PKM"]

ACTIVATIONS = ("relu", "softmax")
PKM_INITS = ("dense", "lample")


@dataclass(frozen=True)
class PKMConfig:
    """Settings of a ``PKM`` layer.

    Attributes:
        d_in, d_out: input and output sizes (>= 1); d_in even unless ``project_query``.
        n_keys: sub-keys per half (>= 1); the layer has n_keys² value slots (App. B: 46).
        d_key: query size, even and >= 2 (each sub-key has d_key / 2 entries); None (default)
            means d_in, and without ``project_query`` it must be d_in. Stored resolved.
        k: value slots per example, 1 <= k <= n_keys² (Lample et al. 2019: 32).
        activation: "relu" (§6.2, default) or "softmax" over the k selected scores.
        project_query: False (default): q = x, split into two halves "without an additional
            projection" (App. A.3), which needs an even d_in. True: q = W_q x, Lample et al.'s
            learned projection, for an odd d_in or a d_key other than d_in.
        init: "dense" (default; Tab. 5's "PKM + init": initialise as the dense block with
            d_ff = n_keys² that PKM approximates, §5's principle: sub-keys ~ N(0, 2/d_key),
            values ~ N(0, 2/n_keys²), and with ``project_query`` W_q ~ N(0, 1/d_in)) or
            "lample" (Lample et al. 2019: sub-keys ~ U(±1/√(d_key/2)), values
            ~ N(0, 1/d_out), and with ``project_query`` W_q ~ U(±1/√d_in)). With d_out = 1,
            "lample" starts with outputs of size √k, far off a unit-variance target (400 Adam
            steps on an 8-d regression, with projection: MSE 2.1 vs 0.24 for "dense").
        optimizer: "adam" or "sgd".
        lr: learning rate > 0 (1e-3; App. A.3 uses one rate for all parameters).
        seed: >= 0, seeds the initialisation.
        dense_small_keys: False (default): always the top k of the n_keys² slots. True: when
            n_keys <= k, read all n_keys² slots densely, as the reference code of Csordás et
            al. does (module docstring); ``activated_units`` is then n_keys².

    Raises:
        ValueError: naming the parameter and its allowed range (d_in when it is odd without
            ``project_query``).
    """

    d_in: int
    d_out: int = 1
    n_keys: int = 46
    d_key: int | None = None
    k: int = 32
    activation: str = "relu"
    project_query: bool = False
    init: str = "dense"
    optimizer: str = "adam"
    lr: float = 1e-3
    seed: int = 0
    dense_small_keys: bool = False

    def __post_init__(self):
        check_layer_config(self)
        check_bool(self.project_query, "project_query")
        check_bool(self.dense_small_keys, "dense_small_keys")
        if self.d_key is None:
            if not self.project_query and self.d_in % 2:
                raise ValueError(f"d_in must be even when project_query is False (x is split "
                                 f"into two halves, App. A.3), got {self.d_in}; set "
                                 f"project_query=True (and an even d_key) to project x first")
            object.__setattr__(self, "d_key", self.d_in)
        if check_int(self.d_key, "d_key", 2) % 2:
            raise ValueError(f"d_key must be an even integer >= 2 (it is split into two "
                             f"halves), got {self.d_key}")
        check_int(self.n_keys, "n_keys", 1)
        check_parameter_memory(self.n_keys * self.d_key + self.n_keys**2 * self.d_out
                               + self.d_key * self.d_in,
                               {"d_in": self.d_in, "d_out": self.d_out, "n_keys": self.n_keys,
                                "d_key": self.d_key})
        check_int(self.k, "k", 1, self.n_keys ** 2)
        check_choice(self.init, "init", PKM_INITS)
        check_choice(self.activation, "activation", ACTIVATIONS)
        if not self.project_query and self.d_key != self.d_in:
            raise ValueError(f"d_key must equal d_in = {self.d_in} when project_query is "
                             f"False, got {self.d_key}")


class PKM(RouterLayer):
    """Product-key memory: x (B, d_in) -> (y (B, d_out), {}) through k of n_keys² value slots.

    Usage counts the k selected value slots of every example (``n_units`` = n_keys²), a
    slot whose ReLU gate is 0 (negative score) included. No batch norm on the query
    (App. A.3); q = x unless ``config.project_query``; initialisation as ``config.init``
    says.

    Attributes:
        config: the ``PKMConfig``.
        query: parameter W_q (d_key, d_in), or None when ``project_query`` is False.
        keys: parameter (2, n_keys, d_key / 2): the sub-keys K_a, K_b of the two halves.
        values: parameter (n_keys², d_out).

    Raises:
        ParameterTypeError (a TypeError and a ValueError): if ``config`` is not a
            ``PKMConfig``.
    """

    name = "pkm"

    def __init__(self, config: PKMConfig):
        check_instance(config, "config", PKMConfig)
        n, half = config.n_keys, config.d_key // 2
        super().__init__(n * n)
        self.config = config
        self.query = (nn.Parameter(torch.empty(config.d_key, config.d_in))
                      if config.project_query else None)
        self.keys = nn.Parameter(torch.empty(2, n, half))
        self.values = nn.Parameter(torch.empty(n * n, config.d_out))
        self._reset_parameters(torch.Generator().manual_seed(config.seed))
        rank_b, rank_a = torch.meshgrid(torch.arange(min(config.k, n)),
                                        torch.arange(min(config.k, n)), indexing="ij")
        possible = (rank_b + 1) * (rank_a + 1) <= config.k
        self.register_buffer("_rank_b", rank_b[possible], persistent=False)   # (M,)
        self.register_buffer("_rank_a", rank_a[possible], persistent=False)

    def _input_like(self) -> torch.Tensor:
        return self.keys

    @torch.no_grad()
    def _reset_parameters(self, g: torch.Generator) -> None:
        c = self.config
        if c.init == "dense":
            if self.query is not None:
                self.query.normal_(0.0, math.sqrt(1 / c.d_in), generator=g)
            self.keys.normal_(0.0, math.sqrt(2 / c.d_key), generator=g)
            self.values.normal_(0.0, math.sqrt(2 / c.n_keys ** 2), generator=g)
            return
        if self.query is not None:
            bound = 1 / math.sqrt(c.d_in)
            self.query.uniform_(-bound, bound, generator=g)
        bound = 1 / math.sqrt(c.d_key // 2)
        self.keys.uniform_(-bound, bound, generator=g)
        self.values.normal_(0.0, c.d_out ** -0.5, generator=g)

    def route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The value slots each example reads and their weights.

        Arguments:
            x: (B, d_in), the layer's dtype and device.

        Returns:
            (idx (B, k) int64 slots in [0, n_keys²), in descending score; gate (B, k) =
            ReLU of the scores, or their softmax over the k). When ``dense`` (the reference's
            small-table case): every slot, idx (B, n_keys²) = 0, 1, …, with their gates.

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite.
        """
        x = self.check_input(x)
        if self.dense:
            gate = self._gates_dense(x)
            return torch.arange(gate.shape[1], device=x.device).expand(len(x), -1), gate
        return self._route(x)

    def _route(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``route`` of a checked x."""
        c = self.config
        q = x @ self.query.T if self.query is not None else x              # (B, d_key)
        halves = q.reshape(len(x), 2, c.d_key // 2)                       # (B, 2, d_key/2)
        u = torch.einsum("bhd,hnd->bhn", halves, self.keys)                # (B, 2, n_keys)
        selected = pkm_select(u, c.k) if _cpu_kernel_dtype(u) else None
        if selected is not None:
            slot, pos_a, pos_b = selected
            score = u[:, 1].gather(1, pos_b) + u[:, 0].gather(1, pos_a)      # (B, k)
        else:
            slot, score = self._select_torch(u)
        gate = torch.relu(score) if c.activation == "relu" else torch.softmax(score, dim=1)
        return slot, gate

    def _select_torch(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(slot, score), each (B, k), from the sub-key scores u (B, 2, n_keys) in torch
        operations: the GPU path, and the CPU one when a score is not finite."""
        c = self.config
        k_half = min(c.k, c.n_keys)
        u_a, i_a = topk_lowest_index(u[:, 0], k_half)                      # (B, k_half)
        u_b, i_b = topk_lowest_index(u[:, 1], k_half)
        with torch.no_grad():  # select among the M candidates without autograd ...
            cand = u_b[:, self._rank_b] + u_a[:, self._rank_a]             # (B, M)
            _, pos = topk_lowest_index(cand, c.k)                          # (B, k)
        rank_b, rank_a = self._rank_b[pos], self._rank_a[pos]              # (B, k) each
        # ... then recompute the k winners' scores (the same sums, bit for bit) with it: the
        # backward of the (B, M) gathers cost more than the whole forward
        score = u_b.gather(1, rank_b) + u_a.gather(1, rank_a)              # (B, k)
        slot = i_b.gather(1, rank_b) * c.n_keys + i_a.gather(1, rank_a)    # Eq. 8
        return slot, score

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """y = Σ_{top k slots} gate · value (on the CPU: the fused kernel ``pkm_forward``,
        equal to the torch path up to the order of the sums; elsewhere, or when a sub-key
        score is not finite because of overflow, ``route`` and a gathered sum).

        Arguments:
            x: (B, d_in), the layer's dtype and device; B may be 0.

        Returns:
            (y (B, d_out), {}): PKM has no auxiliary loss.

        Raises:
            ValueError: naming x (``RouterLayer.check_input``): not a (B, d_in) tensor of the
                parameters' dtype and device, or not finite (tested only when the fused
                kernel does not run or hands back its non-finite scores, which a non-finite x
                always makes).
        """
        c = self.config
        if self.dense:
            x = self.check_input(x)
            y = self._gates_dense(x) @ self.values                              # (B, d_out)
            if self.track_usage:
                self.record_usage(weights=torch.ones(len(x), c.n_keys ** 2, device=x.device))
            return self.check_output(y, x), {}
        self.check_input(x, finite=False)
        params = (self.keys, self.values) + ((self.query,) if self.query is not None else ())
        fused = None
        if _cpu_kernel_dtype(x, *params) and c.n_keys <= MAX_FUSED_KEYS:
            fused = pkm_forward(x, self.query, self.keys, self.values, c.k, c.activation)
        if fused is not None:  # the CPU path: one fused node (see ``_pkm_kernel``)
            y, slots = fused
            if self.track_usage:
                self.record_usage(indices=slots())
            return self.check_output(y, x), {}
        check_finite_tensor(x, "x")  # the kernel was skipped, or it met non-finite scores
        idx, gate = self._route(x)                                         # (B, k) each
        y = (gate.unsqueeze(2) * self.values[idx]).sum(1)                  # (B, d_out)
        self.record_usage(indices=idx)
        return self.check_output(y, x), {}

    @property
    def dense(self) -> bool:
        """Whether every slot is read (``dense_small_keys`` and n_keys <= k: the reference
        code's ``no_knn`` case)."""
        return self.config.dense_small_keys and self.config.n_keys <= self.config.k

    def _gates_dense(self, x: torch.Tensor) -> torch.Tensor:
        """act(u) over all n_keys² slots of a checked x: (B, n_keys²), slot i = i_b·n_keys +
        i_a scored u_b[i_b] + u_a[i_a] (Eq. 8), as the reference's ``get_dense_score``."""
        c = self.config
        q = x @ self.query.T if self.query is not None else x              # (B, d_key)
        halves = q.reshape(len(x), 2, c.d_key // 2)
        u = torch.einsum("bhd,hnd->bhn", halves, self.keys)                # (B, 2, n_keys)
        score = (u[:, 1, :, None] + u[:, 0, None, :]).reshape(len(x), c.n_keys ** 2)
        return torch.relu(score) if c.activation == "relu" else torch.softmax(score, dim=1)

    @property
    def activated_units(self) -> int:
        """k, or n_keys² when the layer reads every slot (``dense``)."""
        return self.config.n_keys ** 2 if self.dense else self.config.k

    @property
    def total_units(self) -> int:
        return self.config.n_keys ** 2

    def flops_per_example(self) -> int:
        """Query projection (2·d_in·d_key), sub-key scores (2·d_key·n_keys), candidate sums
        (M ≈ k ln k) and the value sum (2·k·d_out)."""
        c = self.config
        query = 2 * c.d_in * c.d_key if c.project_query else 0
        if self.dense:  # sub-key scores, the n_keys² sums and the dense value product
            return query + 2 * c.d_key * c.n_keys + c.n_keys ** 2 * (1 + 2 * c.d_out)
        return query + 2 * c.d_key * c.n_keys + self._rank_a.numel() + 2 * c.k * c.d_out
