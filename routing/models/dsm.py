"""``DSM``: the Data-Dependent Sparse Model with a Top-K mask (Baykal et al. 2022, §2.1)."""

from __future__ import annotations

import numpy as np
import torch

from ._base import Features
from ._sparse_dot import fused_sparse_dot
from .dense import KSparseDense
from ._topk_kernel import (bottom_groups, bracket_quantiles, relu_topk, relu_topk_reference,
                           unit_moments)

__all__ = ["DSM"]


class DSM(KSparseDense):
    """g(x) = (A ∘ mask(x)) φ(x) + a₀ with mask(x) = Top-K of φ(x) = ReLU(Bx + c).

    DSM(d, k, t) of Baykal et al. 2022, §2.1: the same frozen bottom layer as ``Dense`` (with
    the same seed), and a top layer that reads only the k units with the largest activations
    (exactly k; among equal activations the lowest unit index wins, as in ``routing.topk``).
    The top layer gathers the k active columns of A, so its cost grows with k, not width.

    Arguments:
        dim: input dimension, >= 1.
        width: total number of hidden units t, >= 1.
        k: activated units per input, 1 <= k <= width.
        seed: seed of the bottom layer (as ``Dense``).

    Buffers: ``B`` (width, dim), ``c`` (width,). Parameters: ``weight`` (1, width) and ``bias``
    (), zero-initialised.

    Computation: on CPU (float32/float64, input not requiring a gradient) a fused Numba
    kernel computes each row of Bx + c in cache and keeps only the k winners
    (``_topk_kernel.relu_topk``); elsewhere (CUDA, or when dg/dx is needed) the torch path
    ``relu_topk_reference`` (addmm, ReLU, ``routing.torch_twins.topk_mask``). Both return the
    winners in increasing unit order. The CPU forward (``model(X)``, ``forward_prepared``)
    also takes the top layer inside the kernel, for each row right after its selection, while
    its winners are in cache, and keeps the winners (uint16 indices up to width 2^16, else
    int32) only for the backward.

    Costs per example: ``flops_paper`` = 2·(dim + 1)·k. ``flops_true`` = 2·dim·width (the
    whole bottom layer: Top-K needs every activation) + width (the selection, counted as one
    comparison per unit, a lower bound for any exact selection) + 2·k (top layer).

    Raises:
        ValueError: if dim < 1, width < 1, k outside [1, width] or seed < 0, or the bottom
            layer would not fit in memory.
    """

    name = "dsm"

    def __init__(self, dim: int, width: int, k: int, seed: int = 0):
        super().__init__(dim, width, k, seed)
        self._quantiles = bracket_quantiles(self.width, self.k)
        # the CPU kernel's operands: [B | c] in groups, and its moments for the Top-K guess
        self._groups = self._moments = self._groups_key = None

    def features(self, X: torch.Tensor) -> Features:
        """The k winners of each row: ``Features(cols (N, k) increasing, vals (N, k) = φ)``."""
        if self._kernel_ok(X):
            cols, vals, _ = self._kernel(X)
            return Features(cols, vals)
        return Features(*relu_topk_reference(X, self.B, self.c, self.k))

    def forward_prepared(self, X: torch.Tensor) -> torch.Tensor:
        """g(x) (B,) for a checked X. On the CPU kernel's path the top layer's product is taken
        inside the kernel while each row's winners are in cache (``fused_sparse_dot``; the
        winners are kept, with narrow indices, only for the backward); the result equals
        ``top_layer(features(X))`` bit for bit."""
        theta = self.coefficient_parameter()  # as it is: no view node in the graph
        if not (self._kernel_ok(X) and theta.dtype == X.dtype):
            return super().forward_prepared(X)

        def compute(th):
            cols, vals, out = self._kernel(X, th)
            return out, cols, vals

        return fused_sparse_dot(theta, compute, self.output_bias)

    def _kernel_ok(self, X: torch.Tensor) -> bool:
        return (X.device.type == "cpu" and X.dtype in (torch.float32, torch.float64)
                and not X.requires_grad and self.B.dtype == X.dtype)

    def _kernel(self, X: torch.Tensor, theta: torch.Tensor | None = None):
        """(cols, vals, out): the winners (cols int64), and with θ also out = Σ θ[cols]·vals
        (then cols uint16 or int32)."""
        Xn = X.detach().contiguous().numpy()
        # rebuilt when the dtype changes or B or c are written to (load_state_dict)
        key = (Xn.dtype, self.B.data_ptr(), self.B._version, self.c.data_ptr(), self.c._version)
        if self._groups_key != key:
            B, c = self.B.numpy(), self.c.numpy()
            self._groups = bottom_groups(B, c, Xn.dtype)
            self._moments = unit_moments(B, c)
            self._groups_key = key
        # the public features are int64 (torch indexing); the fused path keeps its own copy
        # for the backward only, in the narrowest type that holds a unit index
        index = np.int64 if theta is None else np.uint16 if self.width <= 2**16 else np.int32
        cols = np.empty((len(Xn), self.k), index)
        vals = np.empty((len(Xn), self.k), Xn.dtype)
        out = None if theta is None else np.zeros(len(Xn), Xn.dtype)
        if len(Xn):
            relu_topk(Xn, self._groups, self.width, self._moments, self.k, self._quantiles, cols,
                      vals, None if theta is None else theta.contiguous().numpy(), out)
        return (torch.from_numpy(cols), torch.from_numpy(vals),
                None if out is None else torch.from_numpy(out))

    def flops_true(self) -> int:
        return 2 * self.dim * self.width + self.width + 2 * self.k

    def _arguments(self) -> dict:
        return {"width": self.width, "k": self.k, "seed": self.seed}
