"""Rebuild targets and input distributions from their ``config()`` dictionaries."""

from __future__ import annotations

from typing import Any

from lipschitz._target import Target
from lipschitz.hypercube import RandomHypercubeFunction
from lipschitz.manifold import CurvedManifold
from lipschitz.mlp import RandomMLP
from lipschitz.polynomial import RandomPolynomial
from lipschitz.subspace import UniformCube, UniformSubspace
from lipschitz.transforms import LinearlyComposedTarget, ScaledTarget
from routing.validation import check_instance

TARGET_FAMILIES = {"RandomPolynomial": RandomPolynomial,
                   "RandomHypercubeFunction": RandomHypercubeFunction,
                   "RandomMLP": RandomMLP}
DISTRIBUTIONS = {"UniformCube": UniformCube, "UniformSubspace": UniformSubspace,
                 "CurvedManifold": CurvedManifold}


def target_from_config(config: dict[str, Any]) -> Target:
    """The target described by ``config`` (the output of ``Target.config()``).

    Raises:
        ValueError: an unknown ``family``, a missing key, or invalid parameters.
        TypeError (also a ValueError): ``config`` not a dict; an unknown key (TypeError).
    """
    params = _params(config)
    family = params.pop("family", None)
    if family in ("ScaledTarget", "LinearlyComposedTarget"):
        keys = ("target", "factor") if family == "ScaledTarget" else ("target", "matrix", "offset")
        missing = [k for k in keys if k not in params]
        if missing:
            raise ValueError(f"config of a {family} must have the keys {keys}; missing "
                             f"{missing}")
    if family == "ScaledTarget":
        return ScaledTarget(target_from_config(params["target"]), params["factor"])
    if family == "CustomTarget":  # a function of one's own, imported by "module:qualname"
        from lipschitz.custom_target import CustomTarget

        return CustomTarget.from_config({"family": family, **params})
    if family == "LinearlyComposedTarget":
        return LinearlyComposedTarget(
            target_from_config(params["target"]), params["matrix"], params["offset"]
        )
    if family not in TARGET_FAMILIES:
        allowed = sorted(TARGET_FAMILIES) + ["CustomTarget", "LinearlyComposedTarget",
                                             "ScaledTarget"]
        raise ValueError(f"family must be one of {allowed}, got {family!r}")
    if "hidden" in params:
        params["hidden"] = tuple(params["hidden"])
    return TARGET_FAMILIES[family](**params)


def distribution_from_config(config: dict[str, Any]):
    """The input distribution described by ``config`` (the output of its ``config()``).

    Raises:
        ValueError: an unknown ``family`` or invalid parameters.
        TypeError (also a ValueError): ``config`` not a dict; an unknown key (TypeError).
    """
    params = _params(config)
    family = params.pop("family", None)
    if family not in DISTRIBUTIONS:
        raise ValueError(f"family must be one of {sorted(DISTRIBUTIONS)}, got {family!r}")
    return DISTRIBUTIONS[family](**params)


def _params(config) -> dict[str, Any]:
    """A copy of ``config`` after checking it is a dict."""
    return dict(check_instance(config, "config", dict, "a dict (the output of config())"))
