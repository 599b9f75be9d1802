"""§3: DSM simulates interpolation, k-NN, Switch and Scaling layers and the LSH model
(hypothesis property tests on random instances) and the registered check."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from proofs_checks._framework import Verdict
from proofs_checks.simulations import (
    SimulationsCheck, SimulationsParams, dsm_output, simulate_interpolation, simulate_knn,
    simulate_lsh, simulate_scaling, simulate_switch,
)
from proofs_checks.strategies import lipschitz_targets

seeds = st.integers(0, 2**31 - 1)


@given(lipschitz_targets(), st.integers(1, 80), seeds)
def test_dsm_1_t_interpolates(f, t, seed):
    o = simulate_interpolation(f, t, seed)
    assert o.s == 1 and o.t == t and o.max_active == 1
    np.testing.assert_allclose(o.dsm, o.reference, atol=1e-6)


@given(lipschitz_targets(st.integers(2, 10)), st.integers(1, 150), st.integers(1, 6), seeds)
def test_dsm_k_n_is_knn_regression(f, n, k, seed):
    k = min(k, n)
    o = simulate_knn(f, n, k, 40, seed)
    assert o.max_active == k and o.t == n
    np.testing.assert_allclose(o.dsm, o.reference, atol=1e-6)


@given(st.integers(1, 12), st.integers(1, 8), st.integers(1, 16), seeds)
def test_dsm_simulates_switch(dim, experts, width, seed):
    o = simulate_switch(dim, experts, width, 30, seed)
    assert o.max_active == width and o.t == experts * width
    np.testing.assert_allclose(o.dsm, o.reference, atol=1e-6)


@given(st.integers(1, 12), st.integers(1, 8), st.integers(1, 16), seeds)
def test_dsm_simulates_scaling_transformer(dim, blocks, size, seed):
    o = simulate_scaling(dim, blocks, size, 30, seed)
    assert o.max_active == blocks and o.t == blocks * size
    np.testing.assert_allclose(o.dsm, o.reference, atol=1e-6)


@given(lipschitz_targets(), st.integers(1, 4), st.integers(1, 8), st.integers(1, 300), seeds)
def test_lsh_d_s_m_is_dsm_d_s_s2m(f, s, m, n, seed):
    o = simulate_lsh(f, s, m, n, 40, seed)
    assert o.t == s * 2**m and o.max_active == s
    np.testing.assert_allclose(o.dsm, o.reference, atol=1e-6)


def test_simulations_check_holds_and_is_refuted_with_a_wrong_topk():
    p = SimulationsParams(n_instances=5)
    assert SimulationsCheck(p).run(0).verdict == Verdict.HOLDS
    bottom_k = lambda scores, k: np.argsort(np.argsort(scores, axis=1), axis=1) < k  # noqa: E731
    r = SimulationsCheck(p, topk=bottom_k).run(0)
    assert r.verdict == Verdict.REFUTED
    assert r.details["per_simulation"]["knn"]["n_failed"] > 0


def test_dsm_output_shapes():
    assert dsm_output(np.ones(3), np.eye(3, dtype=bool), np.full((3, 3), 2.0)).tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="need A"):
        dsm_output(np.ones(3), np.eye(2, dtype=bool), np.ones((2, 2)))
