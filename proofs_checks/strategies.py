"""Hypothesis strategies drawing the real objects of ``lipschitz`` and ``routing``.

For users' own property tests of claims about sparse networks::

    from hypothesis import given
    from proofs_checks.strategies import lipschitz_targets, subspaces

    @given(lipschitz_targets(), subspaces(8, 2))
    def test_something(f, gamma): ...

Every strategy draws small, valid constructor arguments (including a seed) and builds the
object, so shrinking gives small dimensions and seeds.

The public types are also registered with hypothesis (``register_type_strategies``, run on
import and by hypothesis's plugin entry point, so no import is needed once sparselab is
installed): ``st.from_type(RandomPolynomial)``, ``RandomHypercubeFunction``, ``RandomMLP``,
``Target``, ``UniformCube``, ``UniformSubspace``, ``CurvedManifold``, ``EuclideanLSH``,
``HyperplaneLSH``, ``CrossPolytopeLSH`` and ``UniformHash`` draw the same small valid objects.

Source: the objects of Baykal et al. 2022, §2.2 (Euclidean LSH), §4 (inputs on a
k-dimensional subspace), §5.1 (targets).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from lipschitz import (
    CurvedManifold, RandomHypercubeFunction, RandomMLP, RandomPolynomial, Target, UniformCube,
    UniformSubspace, make_dataset, rescale,
)
from lipschitz.mlp import ACTIVATIONS
from routing.cross_polytope_lsh import CrossPolytopeLSH
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH
from routing.uniform_hash import UniformHash

__all__ = ["lipschitz_targets", "subspaces", "euclidean_lsh_params", "euclidean_lshs",
           "datasets", "Dataset", "FAMILIES", "curved_manifolds", "hyperplane_lshs",
           "cross_polytope_lshs", "uniform_hashes", "register_type_strategies", "TYPE_STRATEGIES"]

#: Target families drawn by ``lipschitz_targets``.
FAMILIES = ("polynomial", "hypercube", "mlp")
_seeds = st.integers(0, 2**31 - 1)


def _as_strategy(value):
    return value if isinstance(value, st.SearchStrategy) else st.just(value)


def lipschitz_targets(n_inputs=None, families=FAMILIES, rescaled: bool = True,
                      max_inputs: int = 8) -> st.SearchStrategy[Target]:
    """Targets of ``lipschitz``: ``RandomPolynomial`` (degree 1–4), ``RandomHypercubeFunction``,
    ``RandomMLP`` (1–2 hidden layers of 2–16 units, any activation), optionally rescaled to
    a random certified bound in [0.1, 10].

    Arguments:
        n_inputs: an int, a strategy of ints, or None (1..max_inputs).
        families: subset of ``FAMILIES``.
        rescaled: also draw ``rescale(f, L)`` versions.
        max_inputs: largest input dimension when ``n_inputs`` is None.

    Raises:
        ValueError: an unknown family or an empty selection.
    """
    unknown = set(families) - set(FAMILIES)
    if unknown or not families:
        raise ValueError(f"families must be a non-empty subset of {FAMILIES}, got {families}")
    dims = st.integers(1, max_inputs) if n_inputs is None else _as_strategy(n_inputs)
    builders = {
        "polynomial": st.builds(RandomPolynomial, dims, st.integers(1, 4),
                                st.floats(0.1, 10.0), _seeds),
        "hypercube": st.builds(RandomHypercubeFunction, dims, _seeds),
        "mlp": st.builds(RandomMLP, dims, st.lists(st.integers(2, 16), min_size=1,
                                                   max_size=2).map(tuple),
                         st.sampled_from(sorted(ACTIVATIONS)), _seeds),
    }
    base = st.one_of(*(builders[f] for f in families))
    if not rescaled:
        return base
    return st.one_of(base, st.builds(lambda f, L: rescale(f, L) if f.lipschitz_bound > 0 else f,
                                     base, st.floats(0.1, 10.0)))


def subspaces(dim=None, k=None) -> st.SearchStrategy[UniformSubspace]:
    """``UniformSubspace(dim, k, seed)``: a random k-dimensional subspace Γ of the dim-cube.

    Arguments:
        dim: an int, a strategy of ints, or None (2..16).
        k: an int, a strategy of ints, or None (1..min(dim, 4)). Draws with k > dim are
            rejected (``assume``-style filtering).
    """
    dims = st.integers(2, 16) if dim is None else _as_strategy(dim)

    @st.composite
    def draw(draw_):
        d = draw_(dims)
        kk = draw_(st.integers(1, min(d, 4)) if k is None else _as_strategy(k))
        if kk > d:
            from hypothesis import reject

            reject()
        return UniformSubspace(d, kk, seed=draw_(_seeds))

    return draw()


def euclidean_lsh_params(dim=None, max_hashes: int = 16,
                         max_tables: int = 4) -> st.SearchStrategy[dict[str, Any]]:
    """Valid ``EuclideanLSH`` constructor arguments: dict with ``dim``, ``n_hashes`` (1..16),
    ``width`` (0.05..2), ``n_tables`` (1..4) and ``seed``; ``EuclideanLSH(**params)`` builds it.

    Arguments:
        dim: an int, a strategy of ints, or None (1..16).
    """
    dims = st.integers(1, 16) if dim is None else _as_strategy(dim)
    return st.fixed_dictionaries({
        "dim": dims, "n_hashes": st.integers(1, max_hashes),
        "width": st.floats(0.05, 2.0, allow_nan=False), "n_tables": st.integers(1, max_tables),
        "seed": _seeds})


def euclidean_lshs(dim=None, **kwargs) -> st.SearchStrategy[EuclideanLSH]:
    """``EuclideanLSH`` hashers built from ``euclidean_lsh_params(dim, **kwargs)``."""
    return euclidean_lsh_params(dim, **kwargs).map(lambda p: EuclideanLSH(**p))


@dataclass(frozen=True)
class Dataset:
    """A drawn regression data set.

    Attributes:
        X: float64 (N, dim) inputs. y: float64 (N,) = target(X) (+ noise).
        target: the ``lipschitz`` target. distribution: ``UniformCube`` or ``UniformSubspace``.
        seed: the seed of ``make_dataset``. noise_std: the label noise.
    """

    X: np.ndarray
    y: np.ndarray
    target: Target
    distribution: Any
    seed: int
    noise_std: float


def datasets(max_inputs: int = 8, max_samples: int = 200,
             noise: bool = False) -> st.SearchStrategy[Dataset]:
    """Data sets ``make_dataset(target, distribution, n, noise_std, seed)`` with a target of
    ``lipschitz_targets`` and inputs uniform on the cube or on a random subspace.

    Arguments:
        max_inputs: largest input dimension. max_samples: largest N (≥ 1).
        noise: also draw label noise (std in [0, 0.1]).
    """

    @st.composite
    def draw(draw_):
        n_inputs = draw_(st.integers(1, max_inputs))
        target = draw_(lipschitz_targets(n_inputs))
        if n_inputs >= 2 and draw_(st.booleans()):
            distribution = UniformSubspace(n_inputs, draw_(st.integers(1, min(n_inputs, 4))),
                                           seed=draw_(_seeds))
        else:
            distribution = UniformCube(n_inputs)
        n = draw_(st.integers(1, max_samples))
        std = draw_(st.floats(0.0, 0.1)) if noise else 0.0
        seed = draw_(_seeds)
        X, y = make_dataset(target, distribution, n, std, seed)
        return Dataset(X, y, target, distribution, seed, std)

    return draw()


def curved_manifolds(dim=None, k=None) -> st.SearchStrategy[CurvedManifold]:
    """``CurvedManifold(dim, k, curvature, seed)``: dim 2..12, k 1..dim // 2, curvature in
    [0, 2] (Baykal et al. 2022, Theorem B.1's bounded-curvature manifold).

    Arguments:
        dim, k: ints, strategies of ints, or None (drawn).
    """
    dims = st.integers(2, 12) if dim is None else _as_strategy(dim)

    @st.composite
    def draw(draw_):
        d = draw_(dims)
        kk = draw_(st.integers(1, max(1, d // 2)) if k is None else _as_strategy(k))
        return CurvedManifold(d, kk, draw_(st.floats(0.0, 2.0)), seed=draw_(_seeds))

    return draw()


def hyperplane_lshs(dim=None) -> st.SearchStrategy[HyperplaneLSH]:
    """``HyperplaneLSH(dim, n_bits 1..16, n_tables 1..4, seed)`` (Charikar 2002; Baykal et al.
    2022, §2.2). ``dim``: an int, a strategy, or None (1..16)."""
    dims = st.integers(1, 16) if dim is None else _as_strategy(dim)
    return st.builds(HyperplaneLSH, dims, st.integers(1, 16), st.integers(1, 4), _seeds)


def cross_polytope_lshs(dim=None) -> st.SearchStrategy[CrossPolytopeLSH]:
    """``CrossPolytopeLSH(dim, n_rotations 1..3, n_tables 1..4, seed)`` (Andoni et al. 2015).
    ``dim``: an int, a strategy, or None (1..16)."""
    dims = st.integers(1, 16) if dim is None else _as_strategy(dim)
    return st.builds(CrossPolytopeLSH, dims, st.integers(1, 3), st.integers(1, 4), _seeds)


def uniform_hashes() -> st.SearchStrategy[UniformHash]:
    """``UniformHash(n_buckets 1..2^16, seed)``: the uniform random hash of Roller et al.
    2021 (Baykal et al. 2022, §5's random-hash baseline)."""
    return st.builds(UniformHash, st.integers(1, 2**16), _seeds)


#: type -> the strategy ``st.from_type`` gives for it once registered.
TYPE_STRATEGIES: dict[type, st.SearchStrategy] = {
    RandomPolynomial: lipschitz_targets(families=("polynomial",), rescaled=False),
    RandomHypercubeFunction: lipschitz_targets(families=("hypercube",), rescaled=False),
    RandomMLP: lipschitz_targets(families=("mlp",), rescaled=False),
    Target: lipschitz_targets(),
    UniformCube: st.builds(UniformCube, st.integers(1, 16)),
    UniformSubspace: subspaces(),
    CurvedManifold: curved_manifolds(),
    EuclideanLSH: euclidean_lshs(),
    HyperplaneLSH: hyperplane_lshs(),
    CrossPolytopeLSH: cross_polytope_lshs(),
    UniformHash: uniform_hashes(),
}


def register_type_strategies() -> None:
    """Register ``TYPE_STRATEGIES`` with hypothesis (``st.register_type_strategy``), so
    ``st.from_type(T)`` draws them. Idempotent. Also hypothesis's plugin entry point
    (``[project.entry-points.hypothesis]`` in pyproject.toml)."""
    for cls, strategy in TYPE_STRATEGIES.items():
        st.register_type_strategy(cls, strategy)


register_type_strategies()
