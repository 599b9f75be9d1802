"""Regression data sets (X, y) drawn from a target and an input distribution, saved as .npz
with the generating configuration inside."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from lipschitz._target import Target
from lipschitz.registry import distribution_from_config, target_from_config
from routing.validation import (as_numpy, check_allocation, check_instance, check_int, check_points,
                                check_real, check_seed)

FORMAT_VERSION = 1
#: The largest label-noise standard deviation: y, its square and mean squared errors stay
#: finite in float64 (a normal draw with σ = 1e308 overflows to inf, and σ = 1e160 would make
#: y² overflow).
MAX_NOISE_STD = 1e100


def make_dataset(target: Target, distribution, n_samples: int, noise_std: float = 0.0,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Draw X from ``distribution`` and set y = target(X) + N(0, noise_std²) noise.

    X uses ``seed``; the noise uses an independent stream derived from the same seed
    (``numpy.random.SeedSequence(seed).spawn``), so the same seed gives the same arrays.

    Arguments:
        target: a target with ``target.n_inputs == distribution.dim``.
        distribution: an object with ``dim`` and ``sample(n, seed)``.
        n_samples: N ≥ 1 (X must fit in this machine's memory).
        noise_std: standard deviation of additive Gaussian label noise, in [0, 1e100]
            (``MAX_NOISE_STD``).
        seed: non-negative integer.

    Returns:
        X float64 (N, dim) and y float64 (N,).

    Raises:
        ValueError: a target that is not a ``Target``, a distribution without ``dim``,
            ``sample`` and ``config``, a dimension mismatch, ``n_samples`` not an integer >= 1
            or too large for memory, ``noise_std`` negative, not finite or above 1e100, a bad
            seed.
    """
    n_samples, noise_std, seed = _check_dataset_args(target, distribution, n_samples,
                                                     noise_std, seed)
    X = _inputs(distribution, n_samples, seed)
    y = target(X)
    noise_seed = np.random.SeedSequence(seed).spawn(2)[1]
    if noise_std > 0:
        y = y + np.random.default_rng(noise_seed).normal(0.0, noise_std, size=n_samples)
    return X, y


def _check_distribution(distribution) -> None:
    if not (hasattr(distribution, "dim") and callable(getattr(distribution, "sample", None))
            and callable(getattr(distribution, "config", None))):
        raise ValueError("distribution must have `dim`, `sample(n, seed)` and `config()`, got "
                         f"{type(distribution).__name__}")


def _check_dataset_args(target, distribution, n_samples, noise_std, seed):
    """The checks ``make_dataset`` and ``dataset_config`` share; returns the checked values."""
    if not isinstance(target, Target):
        raise ValueError(f"target must be a lipschitz.Target, got {type(target).__name__}")
    _check_distribution(distribution)
    if target.n_inputs != distribution.dim:
        raise ValueError(
            f"target.n_inputs ({target.n_inputs}) must equal distribution.dim ({distribution.dim})"
        )
    return (_check_n_samples(n_samples, distribution.dim),
            check_real(noise_std, "noise_std", low=0.0, high=MAX_NOISE_STD), check_seed(seed))


def _check_n_samples(n_samples, dim) -> int:
    n_samples = check_int(n_samples, "n_samples", low=1)
    if isinstance(dim, (int, np.integer)) and dim > 0:  # else the distribution's own check
        check_allocation(n_samples * int(dim), 8, "n_samples", n_samples,
                         f"X, a ({n_samples}, {dim}) float64 array")
    return n_samples


def _inputs(distribution, n_samples: int, seed: int) -> np.ndarray:
    """X of ``make_dataset`` (checked arguments): the first of two streams spawned from seed."""
    sample_seed = np.random.SeedSequence(seed).spawn(2)[0]
    return distribution.sample(n_samples, seed=int(sample_seed.generate_state(1)[0]))


def sample_inputs(distribution, n_samples: int, seed: int = 0) -> np.ndarray:
    """The inputs X of ``make_dataset(target, distribution, n_samples, noise_std, seed)``,
    bit for bit, without evaluating a target (for quantities of the inputs alone, such as
    the bucket geometry of ``experiments.papers.subspace_sweep.bucket_geometry``).

    Arguments:
        distribution: an object with ``dim``, ``sample(n, seed)`` and ``config()``.
        n_samples: N ≥ 1.
        seed: non-negative integer.

    Returns:
        X float64 (N, dim).

    Raises:
        ValueError: a distribution without ``dim``, ``sample`` and ``config``, ``n_samples``
            not an integer >= 1 or too large for memory, a bad seed.
    """
    _check_distribution(distribution)
    return _inputs(distribution, _check_n_samples(n_samples, distribution.dim), check_seed(seed))


def dataset_config(target: Target, distribution, n_samples: int, noise_std: float = 0.0,
                   seed: int = 0) -> dict[str, Any]:
    """The JSON-serialisable configuration that ``regenerate_dataset`` turns back into (X, y).

    Arguments: as ``make_dataset``, checked the same way (a configuration that
    ``regenerate_dataset`` would refuse is never written).

    Returns:
        dict with ``format_version``, ``target`` and ``distribution`` (their ``config()``),
        ``n_samples`` (int), ``noise_std`` (float) and ``seed`` (int).

    Raises:
        ValueError: as ``make_dataset``: a dimension mismatch, ``n_samples`` not an integer
            >= 1 (2.7 is refused, not rounded) or too large for memory, ``noise_std`` negative,
            not finite or above 1e100, a bad seed.
    """
    n_samples, noise_std, seed = _check_dataset_args(target, distribution, n_samples,
                                                     noise_std, seed)
    return {"format_version": FORMAT_VERSION, "target": target.config(),
            "distribution": distribution.config(), "n_samples": n_samples,
            "noise_std": noise_std, "seed": seed}


def regenerate_dataset(config: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Rebuild (X, y) from a ``dataset_config`` dictionary (same numbers, bit for bit).

    Raises:
        ValueError: an unknown family, a missing key or invalid parameters in ``config``.
        TypeError (also a ValueError): ``config`` not a dict.
    """
    check_instance(config, "config", dict, "a dict (the output of dataset_config)")
    missing = [k for k in ("target", "distribution", "n_samples", "noise_std", "seed")
               if k not in config]
    if missing:
        raise ValueError(f"config must have the keys of dataset_config; missing {missing}")
    return make_dataset(target_from_config(config["target"]),
                        distribution_from_config(config["distribution"]),
                        config["n_samples"], config["noise_std"], config["seed"])


def save_dataset(path: str | os.PathLike, X: np.ndarray, y: np.ndarray,
                 config: dict[str, Any]) -> None:
    """Write X, y and ``config`` (stored as a JSON string) to a compressed ``.npz`` file.

    Only what ``load_dataset`` can read back is written: real, finite arrays (no object
    arrays, which numpy would store as pickles) and a JSON-serialisable config.

    Arguments:
        path: file to write (numpy adds ``.npz`` when missing).
        X: real array (N, dim), finite; stored with its float dtype (others as float64).
        y: real array (N,), finite.
        config: JSON-serialisable dict, e.g. ``dataset_config(...)``.

    Raises:
        ValueError: X or y not real and finite, of inconsistent shapes, or a config that is
            not a JSON-serialisable dict.
    """
    X = check_points(X, None, dtype=None)
    y_arr = as_numpy(y)
    if y_arr.dtype == object or not (np.issubdtype(y_arr.dtype, np.floating)
                                     or np.issubdtype(y_arr.dtype, np.integer)):
        raise ValueError(f"y must be a real-valued array, got dtype {y_arr.dtype}")
    if y_arr.shape != (X.shape[0],):
        raise ValueError(f"X must be (N, dim) and y (N,), got {X.shape} and {y_arr.shape}")
    if not np.isfinite(y_arr).all():
        raise ValueError("y must be finite; it has NaN or infinite entries")
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    try:
        text = json.dumps(config, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"config must be JSON-serialisable: {error}") from None
    np.savez_compressed(path, X=X, y=y_arr, config=np.array(text))


def load_dataset(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Read a file written by ``save_dataset``: (X, y, config). No pickles are loaded.

    Raises:
        TypeError (also a ValueError): ``path`` not a str or os.PathLike.
        FileNotFoundError: no file at ``path``.
    """
    check_instance(path, "path", (str, os.PathLike), "a file path (str or os.PathLike)")
    with np.load(path, allow_pickle=False) as data:
        return data["X"], data["y"], json.loads(str(data["config"]))
