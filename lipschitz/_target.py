"""The common interface of every target function: numpy and torch evaluation plus a certificate."""

from __future__ import annotations

import abc
from typing import Any

import numpy as np
import torch

from routing.validation import check_in_cube, check_instance, check_points

#: The largest certified bound a target may have (``lipschitz`` of the random targets and
#: of ``rescale``, |factor| times the bound for ``ScaledTarget``). A target on [-1, 1]^n
#: moves by at most 2√n times its bound, so with bounds up to 1e100 its values, their
#: squares and the mean squared errors computed from them stay finite in float64 (1e308
#: would not: the bound itself, then the values, overflow).
MAX_LIPSCHITZ_BOUND = 1e100


class Target(abc.ABC):
    """A function f: [-1, 1]^n_inputs -> R with a certified ℓ2 Lipschitz bound.

    Subclasses implement ``_numpy(X)`` and ``_torch(X)`` on validated input, the property
    ``lipschitz_bound`` and ``config()`` (a JSON-serialisable dict from which
    ``lipschitz.target_from_config`` rebuilds the same function).

    Attributes:
        n_inputs: the input dimension n.
    """

    n_inputs: int

    def __call__(self, X) -> np.ndarray:
        """Evaluate f on a batch of points.

        Arguments:
            X: real array of shape (N, n_inputs), any float dtype; computed in float64.

        Returns:
            ``np.ndarray`` of shape (N,), float64.

        Raises:
            ValueError: if ``X`` is not (N, n_inputs), has NaN / infinite entries, or has an
                entry outside [-1, 1] (the domain the certificate holds on; 1e-12 of rounding
                is allowed).
        """
        return self._numpy(check_in_cube(check_points(X, self.n_inputs)))

    def torch(self, X: torch.Tensor) -> torch.Tensor:
        """Evaluate f on a torch tensor, on the tensor's device and in its floating dtype.

        Differentiable with autograd, so models can be trained on a GPU against targets
        computed there.

        Arguments:
            X: floating tensor of shape (N, n_inputs) on any device.

        Returns:
            Tensor of shape (N,), same device and dtype as ``X``.

        Raises:
            ValueError: if ``X`` is not a floating (N, n_inputs) tensor, is not finite, or has
                an entry outside [-1, 1] (the domain; 1e-12 of rounding is allowed).
        """
        if not isinstance(X, torch.Tensor) or not torch.is_floating_point(X):
            raise ValueError("X must be a floating-point torch.Tensor")
        if X.ndim != 2 or X.shape[1] != self.n_inputs:
            raise ValueError(f"X must have shape (N, {self.n_inputs}), got {tuple(X.shape)}")
        if X.numel():
            largest = float(X.detach().abs().max())  # NaN propagates through max
            if largest != largest or largest == float("inf"):
                raise ValueError("X must be finite; it has NaN or infinite entries")
            if largest > 1.0 + 1e-12:
                raise ValueError(f"X must lie in the domain [-1, 1]^n (where the certificate "
                                 f"holds); its largest |entry| is {largest:.6g}")
        return self._torch(X)

    @property
    @abc.abstractmethod
    def lipschitz_bound(self) -> float:
        """Certified upper bound on the ℓ2 Lipschitz constant of f over [-1, 1]^n_inputs."""

    @abc.abstractmethod
    def config(self) -> dict[str, Any]:
        """JSON-serialisable description from which the same target can be rebuilt."""

    @abc.abstractmethod
    def _numpy(self, X: np.ndarray) -> np.ndarray: ...

    @abc.abstractmethod
    def _torch(self, X: torch.Tensor) -> torch.Tensor: ...

    def _param(self, array: np.ndarray, like: torch.Tensor) -> torch.Tensor:
        """``array`` (a parameter) on ``like``'s device and dtype, cached per (device, dtype)."""
        cache = self.__dict__.setdefault("_torch_cache", {})
        key = (id(array), like.device, like.dtype)
        if key not in cache:
            cache[key] = (array, torch.as_tensor(array, dtype=like.dtype, device=like.device))
        return cache[key][1]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items() if k != "family")
        return f"{type(self).__name__}({args})"


def check_target(target, name: str = "target") -> Target:
    """Return ``target`` after checking it is a ``lipschitz.Target``.

    Raises:
        ParameterTypeError (a TypeError and a ValueError): naming ``name`` otherwise (a plain
            function must first be wrapped in ``lipschitz.CustomTarget``).
    """
    return check_instance(target, name, Target,
                          "a lipschitz.Target (wrap a plain function in lipschitz.CustomTarget)")
