"""The expert bank shared by the two MoE layers (σ-MoE, top-k MoE), their initialisations, and
the deterministic top-K both the MoEs and PKM select with.

Expert e is a two-layer ReLU block of width G (Csordás et al. 2023 §3.3, Eq. 11):
expert_e(x) = W2_eᵀ ReLU(W1_eᵀ x), with W1 (E, d_in, G) and W2 (E, G, d_out). Only the
selected experts are evaluated: the (example, expert) assignments are sorted by expert and each
expert multiplies its contiguous block of inputs.

On the CPU (float32, float64) small experts run as one Numba kernel forward and one backward
(``routing.layers._expert_kernel``), which saves the torch version's per-expert dispatch but
computes less efficiently than its matrix products; the torch version stays the path for
large experts and the GPU. Forward + backward, float32, d_in = 8, one thread, best of 30
interleaved runs, ms (w = multiply-adds per expert, B·K/E · G · d_in):

    B     G    E   K      w   | kernel | torch
    256   16   16  2     4k   |   0.6  |  1.7
    1024  16   16  4    33k   |   0.9  |  2.6
    4096  32   16  2   131k   |   2.3  |  4.2
    1024  64   16  4   131k   |   2.4  |  3.8
    1024  128  16  4   262k   |   4.0  |  3.4
    4096  64   64  8   262k   |  15.9  | 14.3
    4096  128  64  8   524k   |  34.0  | 22.4

so the kernel is used up to w = ``KERNEL_MAX_WORK`` = 2^17. The torch version's design:

CPU timings that chose sorting over gathering each assignment's weights (torch 2.13, one
thread on a shared 2-core machine, float32, d_in = 8, d_out = 1, forward + backward, best of 7
interleaved runs, ms):

    B     G    E   K  | W[idx] + einsum | W[idx] + bmm | sort, W[e] | sort, W.unbind (used)
    256   16   16  2  |      1.6        |      1.2     |     2.7    |      2.3
    256   128  64  8  |     27.2        |     23.9     |    23.8    |     13.5
    1024  64   16  4  |     27.5        |     20.7     |     5.4    |      3.1
    4096  16   16  1  |     13.6        |     12.7     |     4.2    |      3.3
    4096  16   64  8  |     69.8        |     91.2     |    18.2    |     14.4
    4096  128  16  4  |    303.7        |    265.9     |    27.0    |     22.5
    4096  128  64  8  |    449.9        |    398.7     |    49.2    |     34.4

(forward only, no_grad, 4096/128/64/8, 2 threads: gather 115 ms, sort 6.2 ms). Gathering
copies a (d_in × G) matrix per assignment and its backward scatter-adds them back; sorting pays
a Python loop over the E experts, which only loses at the smallest size. ``W.unbind(0)``
rather than ``W[e]`` because the backward of E separate ``W[e]`` allocates E full-size
gradients, that of ``unbind`` one.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from routing.layers._base import OPTIMIZERS, RouterLayer  # noqa: F401 (re-exported)
from routing.layers._expert_kernel import TOPK_ROWS_MAX_K, expert_mlp, moe_forward, topk_rows

__all__ = ["ExpertBank", "ExpertMoE", "INITS", "OPTIMIZERS", "init_router_",
           "topk_lowest_index"]

INITS = ("sigma_moe", "standard", "switch")
KERNEL_MAX_WORK = 1 << 17  # multiply-adds per expert up to which the CPU kernel is faster


def topk_lowest_index(scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest entries of each row, ties going to the lowest index.

    ``torch.topk`` leaves the order of equal values unspecified (and it differs between CPU
    and CUDA); saturated sigmoids, dropped (-inf) experts and the input x = 0 make ties common.
    On the CPU and for k <= 16 a Numba insertion kernel (``topk_rows``) selects in that order
    directly (1.3x faster than the ``torch.topk`` call alone on 1024 rows of 16, k = 4, and
    no tie check follows). Otherwise
    ``torch.topk`` (a partial selection, 2–3x faster than sorting a row) picks k + 1
    candidates, and only the rows where two of them are equal (or NaN) are redone with a
    stable descending sort, which orders equal values by index. ``_topk_lowest_index_sort``
    is the reference.

    Arguments:
        scores: (B, n) floating tensor.
        k: 1 <= k <= n.

    Returns:
        (values (B, k) same dtype, indices (B, k) int64), values in descending order;
        differentiable in the values.
    """
    n = scores.shape[-1]
    if k >= n or scores.shape[0] == 0:
        return _topk_lowest_index_sort(scores, k)
    if _cpu_kernel_dtype(scores) and k <= TOPK_ROWS_MAX_K:
        idx = topk_rows(scores, k)
        return scores.gather(1, idx), idx
    top, idx = torch.topk(scores, k + 1, dim=-1, sorted=True)         # (B, k + 1)
    with torch.no_grad():
        redo = ((top[:, 1:] == top[:, :-1]).any(dim=1) | torch.isnan(top).any(dim=1))
    top, idx = top[:, :k], idx[:, :k]
    if bool(redo.any()):
        rows = redo.nonzero()[:, 0]
        fixed_values, fixed_idx = _topk_lowest_index_sort(scores[rows], k)
        top = top.index_put((rows,), fixed_values)
        idx = idx.index_put((rows,), fixed_idx)
    return top, idx


def _cpu_kernel_dtype(*tensors: torch.Tensor) -> bool:
    """True iff the tensors are CPU float32 or float64 tensors of one dtype (the Numba
    kernels' domain)."""
    dtype = tensors[0].dtype
    return dtype in (torch.float32, torch.float64) and all(
        t.device.type == "cpu" and t.dtype == dtype for t in tensors)


def _topk_lowest_index_sort(scores: torch.Tensor, k: int):
    """Reference of ``topk_lowest_index``: a stable descending sort of each row."""
    values, indices = torch.sort(scores, dim=-1, descending=True, stable=True)
    return values[:, :k], indices[:, :k]


def _normal_(t: torch.Tensor, std: float, generator: torch.Generator, truncated: bool) -> None:
    if truncated:
        nn.init.trunc_normal_(t, 0.0, std, -2 * std, 2 * std, generator=generator)
    else:
        t.normal_(0.0, std, generator=generator)


@torch.no_grad()
def init_router_(weight: torch.Tensor, init: str, generator: torch.Generator) -> None:
    """Initialise a router matrix W3 (E, d_in) in place.

    - "sigma_moe" (Csordás et al. 2023 §5): N(0, 1) rows rescaled to equal norm, so that
      initially only the angle between x and a row decides its score, with the entry RMS of
      W1 (√(2/d_in)); every row gets norm √2.
    - "standard": N(0, 2/d_in) without the row rescaling.
    - "switch" (Fedus et al. 2022, as quoted in §4): truncated normal, std √(0.1/d_in).

    Raises:
        ValueError: if ``init`` is not one of ``INITS``.
    """
    d_in = weight.shape[1]
    if init == "sigma_moe":
        weight.normal_(0.0, 1.0, generator=generator)
        weight.mul_(math.sqrt(2.0) / weight.norm(dim=1, keepdim=True).clamp_min(1e-12))
    elif init == "standard":
        weight.normal_(0.0, math.sqrt(2.0 / d_in), generator=generator)
    elif init == "switch":
        _normal_(weight, math.sqrt(0.1 / d_in), generator, truncated=True)
    else:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")


class ExpertBank(nn.Module):
    """E two-layer ReLU experts of width G, evaluated only where selected (§3.3, Eq. 11).

    Arguments:
        n_experts: E >= 1.
        d_in, expert_size, d_out: input size, expert width G, output size (all >= 1).

    Attributes:
        W1: parameter (E, d_in, G). W2: parameter (E, G, d_out). Uninitialised until
        ``reset_parameters`` is called.
    """

    def __init__(self, n_experts: int, d_in: int, expert_size: int, d_out: int):
        super().__init__()
        self.W1 = nn.Parameter(torch.empty(n_experts, d_in, expert_size))
        self.W2 = nn.Parameter(torch.empty(n_experts, expert_size, d_out))

    @torch.no_grad()
    def reset_parameters(self, init: str, generator: torch.Generator) -> None:
        """Draw W1 and W2 with ``generator`` (a CPU generator; the bank must be on the CPU).

        - "sigma_moe" (§5): as the dense block the MoE approximates (d_ff = E·G, one layer):
          W1 ~ N(0, 2/d_in), W2 ~ N(0, 2/(E·G)).
        - "standard" (§5's "typical" init, per-expert fan-in): W1 ~ N(0, 2/d_in),
          W2 ~ N(0, 2/G).
        - "switch" (Fedus et al. 2022, §4): truncated normal, std √(0.1/fan_in).

        Raises:
            ValueError: if ``init`` is not one of ``INITS``.
        """
        E, d_in, G = self.W1.shape
        if init == "switch":
            _normal_(self.W1, math.sqrt(0.1 / d_in), generator, truncated=True)
            _normal_(self.W2, math.sqrt(0.1 / G), generator, truncated=True)
            return
        if init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {init!r}")
        fan_out = E * G if init == "sigma_moe" else G
        _normal_(self.W1, math.sqrt(2.0 / d_in), generator, truncated=False)
        _normal_(self.W2, math.sqrt(2.0 / fan_out), generator, truncated=False)

    def forward(self, x: torch.Tensor, expert_idx: torch.Tensor,
                gate: torch.Tensor) -> torch.Tensor:
        """y_b = Σ_k gate[b, k] · W2_eᵀ ReLU(W1_eᵀ x_b), e = expert_idx[b, k].

        (Named ``forward``, not ``apply``, so as not to shadow ``nn.Module.apply``; call the
        bank as ``bank(x, expert_idx, gate)``.)

        Arguments:
            x: (B, d_in), the bank's dtype and device.
            expert_idx: (B, K) int64 in [0, E); repeats within a row are allowed.
            gate: (B, K), x's dtype; gradients flow to it, x, W1 and W2.

        Returns:
            (B, d_out).
        """
        E, d_in, G = self.W1.shape
        work = expert_idx.numel() * G * d_in  # multiply-adds of the first layer, all experts
        if (_cpu_kernel_dtype(x, gate, self.W1, self.W2) and expert_idx.dtype == torch.int64
                and work <= KERNEL_MAX_WORK * E):
            return expert_mlp(x, expert_idx, gate, self.W1, self.W2)
        return self._forward_sorted(x, expert_idx, gate)

    def _forward_sorted(self, x: torch.Tensor, expert_idx: torch.Tensor,
                        gate: torch.Tensor) -> torch.Tensor:
        """``forward`` in torch operations (the GPU path): assignments sorted by expert, one
        block of matrix products per expert."""
        B, K = expert_idx.shape
        flat = expert_idx.reshape(-1)                                    # (B·K,)
        order = torch.argsort(flat, stable=True)
        rows = torch.div(order, K, rounding_mode="floor")                # example of each
        counts = torch.bincount(flat, minlength=self.W1.shape[0]).tolist()
        blocks = x[rows].split(counts)                                   # (n_e, d_in) each
        outs = [torch.relu(xb @ w1) @ w2                                 # (n_e, d_out)
                for xb, w1, w2, n in zip(blocks, self.W1.unbind(0), self.W2.unbind(0), counts)
                if n > 0]
        y = x.new_zeros(B, self.W2.shape[2])
        if not outs:  # empty batch
            return y
        weighted = torch.cat(outs) * gate.reshape(-1)[order].unsqueeze(1)  # (B·K, d_out)
        return y.index_add(0, rows, weighted)


class ExpertMoE(RouterLayer):
    """What the two MoE layers share: a router W3 (E, d_in), an ``ExpertBank``, their
    initialisation from ``config.init`` and a generator seeded with ``config.seed``, usage
    counted per expert, and the sizes and costs of K experts of G units per example.

    Subclasses select experts (``route``) and compute their auxiliary loss in ``forward``.

    Attributes:
        config: the layer's config (fields d_in, d_out, n_experts, expert_size, k, init, seed).
        router: parameter W3 (n_experts, d_in).
        experts: ``ExpertBank`` with W1 (E, d_in, G) and W2 (E, G, d_out).
        generator: the CPU generator that drew the initialisation (σ-MoE's expert dropout
            continues from it).
    """

    def __init__(self, config):
        super().__init__(config.n_experts)
        self.config = config
        self.router = nn.Parameter(torch.empty(config.n_experts, config.d_in))
        self.experts = ExpertBank(config.n_experts, config.d_in, config.expert_size,
                                  config.d_out)
        self.generator = torch.Generator().manual_seed(config.seed)
        init_router_(self.router, config.init, self.generator)
        self.experts.reset_parameters(config.init, self.generator)

    def _input_like(self) -> torch.Tensor:
        return self.router

    @property
    def activated_units(self) -> int:
        return self.config.k * self.config.expert_size

    @property
    def total_units(self) -> int:
        return self.config.n_experts * self.config.expert_size

    def _fused_forward(self, x: torch.Tensor, gate: str, aux: str, coef: float):
        """(y, aux loss) of the whole layer in one autograd node (``moe_forward``), usage
        recorded, where it applies (x and the parameters float32/float64 on the CPU, k <= 16);
        else None. x must have passed ``check_input`` (finite: the kernel does not test it)."""
        c = self.config
        W1, W2 = self.experts.W1, self.experts.W2
        if not (_cpu_kernel_dtype(x, self.router, W1, W2)
                and c.k <= min(c.n_experts, TOPK_ROWS_MAX_K)):
            return None
        y, loss, idx = moe_forward(x, self.router, W1, W2, c.k, gate, aux, coef)
        self.record_usage(indices=idx)
        return y, loss

    def flops_per_example(self) -> int:
        """Router (2·d_in·E) plus K experts (2·G·(d_in + d_out) each)."""
        c = self.config
        return 2 * c.d_in * c.n_experts + c.k * 2 * c.expert_size * (c.d_in + c.d_out)
