"""Target functions with certified Lipschitz constants and input distributions.

Source: Baykal et al. 2022, §2 (Lipschitz targets), §4 (inputs on a k-dimensional subspace,
Theorem 4.1, Lemma 4.2; manifolds, Theorem B.1) and §5.1 (random polynomial, random hypercube
function and random neural-net targets).
"""

from lipschitz._target import Target
from lipschitz.custom_target import CustomTarget
from lipschitz.dataset import (
    dataset_config,
    load_dataset,
    make_dataset,
    regenerate_dataset,
    sample_inputs,
    save_dataset,
)
from lipschitz.estimate import LipschitzEstimate, estimate_lipschitz
from lipschitz.hypercube import RandomHypercubeFunction
from lipschitz.manifold import CurvedManifold
from lipschitz.mlp import RandomMLP
from lipschitz.polynomial import RandomPolynomial
from lipschitz.registry import distribution_from_config, target_from_config
from lipschitz.subspace import UniformCube, UniformSubspace
from lipschitz.transforms import LinearlyComposedTarget, ScaledTarget, compose_linear, rescale

__all__ = [
    "Target", "CustomTarget", "RandomPolynomial", "RandomHypercubeFunction", "RandomMLP",
    "ScaledTarget", "LinearlyComposedTarget", "rescale", "compose_linear",
    "UniformCube", "UniformSubspace", "CurvedManifold",
    "estimate_lipschitz", "LipschitzEstimate",
    "make_dataset", "sample_inputs", "dataset_config", "regenerate_dataset", "save_dataset",
    "load_dataset",
    "target_from_config", "distribution_from_config",
]
