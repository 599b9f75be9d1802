"""Regression data sets (X, y) drawn from a target and an input distribution, saved as .npz
with the generating configuration inside."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from lipschitz._target import Target
from lipschitz.registry import distribution_from_config, target_from_config
from routing.validation import check_int, check_real, check_seed

FORMAT_VERSION = 1


def make_dataset(target: Target, distribution, n_samples: int, noise_std: float = 0.0,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Draw X from ``distribution`` and set y = target(X) + N(0, noise_std²) noise.

    X uses ``seed``; the noise uses an independent stream derived from the same seed
    (``numpy.random.SeedSequence(seed).spawn``), so the same seed gives the same arrays.

    Arguments:
        target: a target with ``target.n_inputs == distribution.dim``.
        distribution: an object with ``dim`` and ``sample(n, seed)``.
        n_samples: N ≥ 1.
        noise_std: standard deviation of additive Gaussian label noise, ≥ 0.
        seed: non-negative integer.

    Returns:
        X float64 (N, dim) and y float64 (N,).

    Raises:
        ValueError: a dimension mismatch, ``n_samples < 1``, ``noise_std < 0``, seed < 0.
    """
    if target.n_inputs != distribution.dim:
        raise ValueError(
            f"target.n_inputs ({target.n_inputs}) must equal distribution.dim ({distribution.dim})"
        )
    n_samples = check_int(n_samples, "n_samples", low=1)
    noise_std = check_real(noise_std, "noise_std", low=0.0)
    seed = check_seed(seed)
    sample_seed, noise_seed = np.random.SeedSequence(seed).spawn(2)
    X = distribution.sample(n_samples, seed=int(sample_seed.generate_state(1)[0]))
    y = target(X)
    if noise_std > 0:
        y = y + np.random.default_rng(noise_seed).normal(0.0, noise_std, size=n_samples)
    return X, y


def dataset_config(target: Target, distribution, n_samples: int, noise_std: float = 0.0,
                   seed: int = 0) -> dict[str, Any]:
    """The JSON-serialisable configuration that ``regenerate_dataset`` turns back into (X, y)."""
    return {"format_version": FORMAT_VERSION, "target": target.config(),
            "distribution": distribution.config(), "n_samples": int(n_samples),
            "noise_std": float(noise_std), "seed": int(seed)}


def regenerate_dataset(config: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Rebuild (X, y) from a ``dataset_config`` dictionary (same numbers, bit for bit).

    Raises:
        ValueError: an unknown family or invalid parameters in ``config``.
    """
    return make_dataset(target_from_config(config["target"]),
                        distribution_from_config(config["distribution"]),
                        config["n_samples"], config["noise_std"], config["seed"])


def save_dataset(path: str | os.PathLike, X: np.ndarray, y: np.ndarray,
                 config: dict[str, Any]) -> None:
    """Write X, y and ``config`` (stored as a JSON string) to a compressed ``.npz`` file.

    Raises:
        ValueError: X and y of inconsistent lengths.
    """
    X, y = np.asarray(X), np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (N, dim) and y (N,), got {X.shape} and {y.shape}")
    np.savez_compressed(path, X=X, y=y, config=np.array(json.dumps(config)))


def load_dataset(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Read a file written by ``save_dataset``: (X, y, config). No pickles are loaded."""
    with np.load(path, allow_pickle=False) as data:
        return data["X"], data["y"], json.loads(str(data["config"]))
