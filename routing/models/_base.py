"""What every regression model of sparselab shares: frozen features, a trainable linear top layer.

Every model of Baykal et al. 2022, §5.1 is "a random-initialized, non-trainable bottom layer
… and a trainable top layer" (for the LSH model: frozen hashes and a trainable scalar per
bucket). So each model here splits into

* ``features(X)``: the frozen part, a sparse (or dense) feature vector per input, given as
  ``Features(cols, vals)``: example n has value ``vals[n, i]`` at coefficient ``cols[n, i]``;
* ``top_layer(features)``: the trainable part, ``bias + Σ_i θ[cols[n, i]] · vals[n, i]`` with
  θ the flat vector of trainable coefficients (``coefficients()``).

The output is linear in θ, which is what ``experiments.kinds.fitting`` uses for the exact fit
(ridge least squares on the features) and for SGD on cached features.
"""

from __future__ import annotations

import abc
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from routing.validation import (check_allocation, check_finite_tensor, check_int, check_real,
                                check_tensor)

from ._sparse_dot import sparse_dot

__all__ = ["Features", "RegressionModel", "bottom_layer", "sparse_dot"]

# Default bottom layer: B_ij ~ N(0, 1/dim), c_j ~ N(0, BIAS_VARIANCE). For x uniform on
# [-1, 1]^dim, b_j·x has variance |x|²/dim ≈ 1/3, so the bias has the same scale and the
# kink of each ReLU unit falls inside the data.
BIAS_VARIANCE = 1.0 / 3.0


@dataclass(frozen=True)
class Features:
    """Frozen features of a batch: example n has value ``vals[n, i]`` at column ``cols[n, i]``.

    Attributes:
        cols: (N, a) int64 column indices into the coefficient vector θ (a = activated
            features per example; uint16 or int32 after :meth:`narrowed`), or ``None`` for
            dense features (column i is θ[i]).
        vals: (N, a) floating values (for dense features a = number of coefficients).
    """

    cols: torch.Tensor | None
    vals: torch.Tensor

    def __len__(self) -> int:
        return self.vals.shape[0]

    def __getitem__(self, rows) -> "Features":
        """The features of ``rows``: a slice (views), or an index tensor (copies; a 1-D
        integer one by ``index_select``, 2–4x faster than ``t[rows]`` on CPU, same rows)."""
        if isinstance(rows, torch.Tensor) and rows.ndim == 1 and not rows.is_floating_point() \
                and rows.dtype != torch.bool:
            return Features(None if self.cols is None else self.cols.index_select(0, rows),
                            self.vals.index_select(0, rows))
        return Features(None if self.cols is None else self.cols[rows], self.vals[rows])

    def to(self, device) -> "Features":
        return Features(None if self.cols is None else self.cols.to(device), self.vals.to(device))

    def narrowed(self, n_coef: int) -> "Features":
        """The same features with ``cols`` in the narrowest integer type that holds a column
        of n_coef (uint16 up to 2^16 columns, else int32), where ``sparse_dot``'s CPU kernels
        read them (CPU, float32/float64 values); unchanged elsewhere (torch indexing wants
        int64, int32 or uint8) or for dense features. For a training cache: on 1024 × 256 DSM
        features the top layer's forward and backward were 25-30 % faster with uint16 than
        with int64 columns, and the cache's columns take 4x less memory.

        Raises:
            ValueError: if n_coef < 1.
        """
        n_coef = check_int(n_coef, "n_coef", 1)
        if (self.cols is None or self.vals.device.type != "cpu"
                or self.vals.dtype not in (torch.float32, torch.float64) or n_coef > 2**31):
            return self
        narrow = torch.uint16 if n_coef <= 2**16 and _uint16_rows_work() else torch.int32
        return Features(self.cols.to(narrow), self.vals)

    def nbytes(self) -> int:
        cols = 0 if self.cols is None else self.cols.numel() * self.cols.element_size()
        return cols + self.vals.numel() * self.vals.element_size()


@functools.lru_cache(maxsize=None)
def _uint16_rows_work() -> bool:
    """Whether this torch selects and concatenates rows of uint16 tensors (a dtype with few
    CPU kernels in older releases); ``Features.narrowed`` uses int32 otherwise."""
    try:
        rows = torch.zeros(3, 2, dtype=torch.uint16)
        torch.cat([rows[torch.tensor([0, 2])], rows[1:2]]).numpy()
        return True
    except (RuntimeError, TypeError):
        return False


def bottom_layer(dim: int, width: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The frozen random layer x -> Bx + c shared by Dense, DSM and RandomHashModel.

    B (width, dim) has i.i.d. N(0, 1/dim) entries (rows of expected unit norm) and c (width,)
    i.i.d. N(0, 1/3) entries, drawn in that order from ``numpy.random.default_rng(seed)``, so
    models with the same (dim, width, seed) share their bottom layer. Returns float64 arrays.
    """
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((width, dim)) / np.sqrt(dim)
    c = rng.standard_normal(width) * np.sqrt(BIAS_VARIANCE)
    return B, c


class RegressionModel(nn.Module, abc.ABC):
    """Base class: y ≈ g(x) = bias + θ · features(x), output shape (B,).

    Subclasses set ``dim`` and register their trainable parameters and frozen buffers, and
    implement ``features``, ``coefficient_parameter``, ``set_coefficients`` and the size and cost
    properties. Parameters are float32 by default; ``model.to(device, dtype)`` moves and casts
    the frozen parts too (they are buffers).
    """

    name: str = "model"
    dim: int

    # -- the two halves ---------------------------------------------------------------------
    @abc.abstractmethod
    def features(self, X: torch.Tensor) -> Features:
        """Frozen features of a validated (B, dim) tensor on the model's device and dtype."""

    @abc.abstractmethod
    def coefficient_parameter(self) -> nn.Parameter:
        """The trainable parameter that holds θ (any shape; θ is its C-order flattening)."""

    def coefficients(self) -> torch.Tensor:
        """The trainable coefficients θ as a flat view (n_coef,) of the parameter."""
        return self.coefficient_parameter().view(-1)

    @property
    def output_bias(self) -> torch.Tensor | None:
        """The trainable scalar output bias (the parameter named ``bias``), or None."""
        return self._parameters.get("bias")

    def top_layer(self, features: Features) -> torch.Tensor:
        """(B,) outputs from frozen features; differentiable in the trainable parameters."""
        bias = self.output_bias
        if features.cols is not None:  # θ's parameter as it is and the bias, both inside
            return sparse_dot(self.coefficient_parameter(), features.cols, features.vals,
                              bias)  # (B,)
        out = features.vals @ self.coefficients()  # (B,)
        return out if bias is None else out + bias

    def forward(self, X) -> torch.Tensor:
        """Predictions g(x).

        Arguments:
            X: (B, dim) real tensor or array; moved to the model's device and dtype.

        Returns:
            (B,) tensor on the model's device.

        Raises:
            ValueError: if X is not (B, dim), not real-valued, or has NaN / infinite entries.
        """
        return self.forward_prepared(self.prepare(X))

    def forward_prepared(self, X: torch.Tensor) -> torch.Tensor:
        """Predictions g(x) (B,) for X (B, dim) already checked by ``prepare``.

        ``top_layer(features(X))``; a model may fuse the two (DSM on CPU) with the same result.
        """
        return self.top_layer(self.features(X))

    @torch.no_grad()
    def set_coefficients(self, theta, bias=None) -> None:
        """Overwrite θ and, if the model has one, the scalar output bias.

        Arguments:
            theta: real array or tensor (n_coef,), finite (cast to the model's dtype).
            bias: a finite real number or 0-d array/tensor; None means 0. Must be None for a
                model without an output bias (``LSHModel``), where it would be dropped.

        Raises:
            ValueError: if theta has another shape, is not real or not finite (also after the
                cast: 1e39 overflows float32), or bias is not a finite real number, or is given
                to a model without an output bias. Nothing is written then.
        """
        target = self.coefficients()
        theta = check_tensor(theta, "theta", tuple(target.shape), allow_bool=False)
        theta = theta.to(device=target.device, dtype=target.dtype)
        check_finite_tensor(theta, "theta")
        bias_param = self.output_bias
        if bias_param is None:
            if bias is not None:
                raise ValueError(f"bias must be None: {type(self).__name__} has no output bias "
                                 f"(a bias of {bias!r} would be dropped)")
        else:
            bias = 0.0 if bias is None else _scalar(bias, "bias")
            if not math.isfinite(float(torch.tensor(bias, dtype=bias_param.dtype))):
                raise ValueError(f"bias={bias:.6g} overflows the model's dtype "
                                 f"{bias_param.dtype}")
        target.copy_(theta)
        if bias_param is not None:
            bias_param.fill_(bias)

    @torch.no_grad()
    def shift_output(self, c: float) -> None:
        """Add the constant ``c`` to every prediction, in place, through the trainable
        parameters: here the output bias; a model without one overrides this (``LSHModel``:
        every bucket's constant). ``experiments.kinds.fitting.fit_model`` fits centred targets
        and adds their mean back with it.

        Raises:
            NotImplementedError: a model with neither an output bias nor an override.
            ValueError: if ``c`` is not a finite real number, or the shifted bias overflows
                the model's dtype (nothing is changed then).
        """
        bias = self.output_bias
        if bias is None:
            raise NotImplementedError(f"{type(self).__name__} has no output bias: override "
                                      f"shift_output")
        shifted = bias + _scalar(c, "c")
        check_finite_tensor(shifted, "the shifted output bias (bias + c)")
        bias.copy_(shifted)

    # -- input handling ---------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return self.coefficients().device

    @property
    def dtype(self) -> torch.dtype:
        return self.coefficients().dtype

    def prepare(self, X, name: str = "X") -> torch.Tensor:
        """X as a (B, dim) tensor on the model's device and dtype, after checking it.

        Raises:
            ValueError: if X is not 2-D with ``dim`` columns, not real-valued, or not finite.
        """
        return check_tensor(X, name, (None, self.dim), device=self.device, dtype=self.dtype)

    # -- sizes and costs --------------------------------------------------------------------
    @property
    def n_coef(self) -> int:
        """Number of trainable coefficients θ (without the bias)."""
        return self.coefficients().numel()

    @property
    def n_params(self) -> int:
        """Trainable parameters (θ and the bias if any)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    @property
    @abc.abstractmethod
    def total_units(self) -> int:
        """Total width (or number of buckets n_tables·2^n_bits for the LSH model)."""

    @property
    @abc.abstractmethod
    def activated_units(self) -> int:
        """Units (buckets) that take part in one prediction."""

    def flops_paper(self) -> int:
        """FLOPs per example in the paper's convention: 2·(dim + 1)·activated_units.

        With dim = 8 this gives Table 1's column of Baykal et al. 2022 (18432, 36864, 73728
        for 1024, 2048, 4096 activated units). It ignores routing.
        """
        return 2 * (self.dim + 1) * self.activated_units

    @abc.abstractmethod
    def flops_true(self) -> int:
        """FLOPs (and integer operations) per example including routing; see each model."""

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable summary: model name, sizes, costs and construction arguments."""
        summary = {"model": self.name, "dim": self.dim, "width": None, "k": None,
                   "buckets": None, "n_bits": None, "n_tables": None, "degree": None}
        summary.update(self._arguments())
        summary.update(total_units=self.total_units, activated_units=self.activated_units,
                       n_params=self.n_params, flops_paper=self.flops_paper(),
                       flops_true=self.flops_true())
        return summary

    @abc.abstractmethod
    def _arguments(self) -> dict[str, Any]:
        """The constructor arguments (for ``describe`` and ``repr``)."""

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._arguments().items())


def _scalar(value, name: str) -> float:
    """A finite real number from a Python/numpy number or a one-element array or tensor.

    Raises:
        ValueError: naming ``name`` for anything else (NaN, inf, complex, bool, a longer
            array).
    """
    if isinstance(value, (torch.Tensor, np.ndarray)):
        size = value.numel() if isinstance(value, torch.Tensor) else value.size
        if size != 1:
            raise ValueError(f"{name} must be a real number, got an array of shape "
                             f"{tuple(value.shape)}")
        value = (value.detach().cpu() if isinstance(value, torch.Tensor) else value).reshape(())
        value = value.item()
    return check_real(value, name)


def check_dim_width(dim, width) -> tuple[int, int]:
    """``dim`` and ``width`` of a model with a (width, dim) bottom layer, checked.

    Raises:
        ValueError: if either is not an integer >= 1, or the float32 bottom layer
            (width · dim values) would not fit in this machine's memory.
    """
    dim, width = check_int(dim, "dim", 1), check_int(width, "width", 1)
    check_allocation(width * (dim + 1), 4, "width" if width >= dim else "dim",
                     width if width >= dim else dim,
                     f"the ({width}, {dim}) float32 bottom layer")
    return dim, width
