"""The hypothesis strategies draw valid, real objects of lipschitz and routing."""

import numpy as np
from hypothesis import given, settings

from lipschitz import Target, UniformSubspace
from proofs_checks.strategies import (
    Dataset, datasets, euclidean_lsh_params, euclidean_lshs, lipschitz_targets, subspaces,
)
from routing.euclidean_lsh import EuclideanLSH


@given(lipschitz_targets(max_inputs=6))
def test_lipschitz_targets(f):
    assert isinstance(f, Target) and 1 <= f.n_inputs <= 6 and f.lipschitz_bound >= 0
    X = np.zeros((2, f.n_inputs))
    assert f(X).shape == (2,)


@given(subspaces(7, 3))
def test_subspaces_fixed_sizes(s):
    assert isinstance(s, UniformSubspace) and s.basis.shape == (7, 3)
    np.testing.assert_allclose(s.basis.T @ s.basis, np.eye(3), atol=1e-10)


@given(subspaces())
def test_subspaces_drawn_sizes(s):
    assert 1 <= s.k <= min(s.dim, 4)


@given(euclidean_lsh_params(), euclidean_lshs(3))
def test_euclidean_lsh(params, h):
    built = EuclideanLSH(**params)
    assert built.directions.shape == (params["n_tables"], params["n_hashes"], params["dim"])
    assert h.dim == 3


@settings(max_examples=20, deadline=None)
@given(datasets(noise=True))
def test_datasets(ds):
    assert isinstance(ds, Dataset)
    assert ds.X.shape == (len(ds.y), ds.target.n_inputs)
    assert np.abs(ds.X).max() <= 1.0
    if ds.noise_std == 0:
        np.testing.assert_allclose(ds.y, ds.target(ds.X))
