"""Random multilayer-perceptron targets (the "random 3-layer neural net" of Baykal et al. 2022,
§5.1 and Table 2)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from lipschitz._target import MAX_LIPSCHITZ_BOUND, Target
from routing.validation import check_allocation, check_instance, check_int, check_real, check_seed

#: Activations and the Lipschitz constant of each (sup |σ'|): ReLU, tanh and softplus 1,
#: the logistic sigmoid 1/4 (σ' = σ(1 − σ) ≤ 1/4).
ACTIVATIONS: dict[str, float] = {"relu": 1.0, "tanh": 1.0, "sigmoid": 0.25, "softplus": 1.0}

_NUMPY_ACTIVATIONS = {
    "relu": lambda z: np.maximum(z, 0.0),
    "tanh": np.tanh,
    "sigmoid": lambda z: 0.5 * (1.0 + np.tanh(0.5 * z)),
    "softplus": lambda z: np.logaddexp(0.0, z),
}
_TORCH_ACTIVATIONS = {
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softplus": torch.nn.functional.softplus,
}


class RandomMLP(Target):
    r"""A randomly initialised fully connected network x ↦ W_L σ(… σ(W_1 x + b_1) …) + b_L.

    With the default ``hidden=(64, 64)`` this is the "random 3-layer neural net function" of
    Baykal et al. 2022, §5.1 / Table 2 (three linear layers n → 64 → 64 → 1). The paper does
    not give the initialisation; we use LeCun-normal weights W_l ~ N(0, 1/fan_in) and biases
    ~ U[−1/√fan_in, 1/√fan_in] (PyTorch's default bias range), drawn with ``seed``.

    Certificate (``lipschitz_bound``). Each affine map is ‖W_l‖₂-Lipschitz in ℓ2 (spectral
    norm) and each elementwise activation is Lip(σ)-Lipschitz (``ACTIVATIONS``), so the
    composition is Lipschitz on all of R^n with constant Π_l ‖W_l‖₂ · Lip(σ)^(L−1). When
    ``lipschitz`` is given, the last layer (weights and bias) is multiplied by
    lipschitz / (that product), which makes the certified bound exactly ``lipschitz``.

    Arguments:
        n_inputs: input dimension n ≥ 1.
        hidden: widths of the hidden layers (a tuple or list), each ≥ 1 (may be empty: an
            affine target); the weights must fit in this machine's memory.
        activation: one of ``ACTIVATIONS``.
        seed: non-negative integer seed.
        lipschitz: if given, in (0, 1e100] (``MAX_LIPSCHITZ_BOUND``), rescale to this
            certified Lipschitz bound.

    Attributes:
        weights: list of float64 arrays, weights[l] of shape (fan_out, fan_in).
        biases: list of float64 arrays, biases[l] of shape (fan_out,).

    Raises:
        ValueError: ``n_inputs < 1``, a hidden width < 1, widths whose weights would not fit
            in memory, an unknown activation, a negative seed or ``lipschitz`` outside
            (0, 1e100].
        TypeError (also a ValueError): ``hidden`` not a tuple or list.
    """

    def __init__(
        self,
        n_inputs: int,
        hidden: tuple[int, ...] = (64, 64),
        activation: str = "relu",
        seed: int = 0,
        lipschitz: float | None = None,
    ):
        self.n_inputs = check_int(n_inputs, "n_inputs", low=1)
        check_instance(hidden, "hidden", (tuple, list), "a tuple or list of layer widths")
        self.hidden = tuple(check_int(h, f"hidden[{i}]", low=1) for i, h in enumerate(hidden))
        sizes = (self.n_inputs, *self.hidden, 1)
        widths = {"n_inputs": self.n_inputs,
                  **{f"hidden[{i}]": h for i, h in enumerate(self.hidden)}}
        largest = max(widths, key=widths.get)
        check_allocation(sum(a * b for a, b in zip(sizes[:-1], sizes[1:])) + sum(sizes), 8, largest,
                         widths[largest], f"the float64 weights of a {sizes} network")
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.activation = activation
        self.seed = check_seed(seed)
        self.lipschitz = None if lipschitz is None else check_real(
            lipschitz, "lipschitz", low=0.0, high=MAX_LIPSCHITZ_BOUND, low_open=True
        )
        rng = np.random.default_rng(self.seed)
        self.weights, self.biases = [], []
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            self.weights.append(rng.normal(0.0, 1.0 / np.sqrt(fan_in), size=(fan_out, fan_in)))
            self.biases.append(rng.uniform(-1.0, 1.0, size=fan_out) / np.sqrt(fan_in))
        if self.lipschitz is not None:
            scale = self.lipschitz / self._product_bound()
            self.weights[-1] = self.weights[-1] * scale
            self.biases[-1] = self.biases[-1] * scale
        self._bound = self._product_bound()

    def _product_bound(self) -> float:
        norms = [np.linalg.norm(W, 2) for W in self.weights]
        return float(np.prod(norms) * ACTIVATIONS[self.activation] ** len(self.hidden))

    @property
    def lipschitz_bound(self) -> float:
        """Π_l ‖W_l‖₂ · Lip(σ)^(number of hidden layers) (derivation in the class docstring)."""
        return self._bound

    def config(self) -> dict[str, Any]:
        return {"family": "RandomMLP", "n_inputs": self.n_inputs, "hidden": list(self.hidden),
                "activation": self.activation, "seed": self.seed, "lipschitz": self.lipschitz}

    def _numpy(self, X: np.ndarray) -> np.ndarray:
        sigma = _NUMPY_ACTIVATIONS[self.activation]
        h = X
        for W, b in zip(self.weights[:-1], self.biases[:-1]):
            h = sigma(h @ W.T + b)
        return (h @ self.weights[-1].T + self.biases[-1])[:, 0]

    def _torch(self, X: torch.Tensor) -> torch.Tensor:
        sigma = _TORCH_ACTIVATIONS[self.activation]
        h = X
        for W, b in zip(self.weights[:-1], self.biases[:-1]):
            h = sigma(h @ self._param(W, X).T + self._param(b, X))
        return (h @ self._param(self.weights[-1], X).T + self._param(self.biases[-1], X))[:, 0]
