"""The hypothesis strategies draw valid, real objects of lipschitz and routing."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lipschitz import Target, UniformSubspace
from proofs_checks.strategies import (
    TYPE_STRATEGIES,
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


# --- the public types registered with hypothesis: st.from_type draws valid real objects


def test_every_registered_type_draws_its_own_instances():
    for cls in TYPE_STRATEGIES:
        @settings(max_examples=5, deadline=None)
        @given(st.from_type(cls))
        def draw(obj):
            assert isinstance(obj, cls)

        draw()


@given(st.from_type(EuclideanLSH))
@settings(max_examples=10, deadline=None)
def test_from_type_hashers_hash(h):
    X = np.zeros((3, h.dim))
    assert np.asarray(h.bucket_ids(X)).shape == (3, h.n_tables)


def test_entry_point_registers_without_an_import():
    import subprocess
    import sys

    code = ("import sys\nfrom hypothesis import strategies as st\n"
            "from lipschitz import RandomPolynomial\n"
            "f = st.from_type(RandomPolynomial).example()\n"
            "assert isinstance(f, RandomPolynomial)\n"
            "print('proofs_checks.strategies' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"  # loaded by hypothesis's entry point, not by us
