"""§3: DSM simulates interpolation, k-NN, Switch and Scaling layers and the LSH model —
exact identities (hypothesis property tests on random instances), their planted
non-identities, and both decision thresholds of the registered check (tolerance, sparsity)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lipschitz import RandomPolynomial
from proofs_checks._framework import Verdict
from proofs_checks.simulations import (
    TOLERANCE, OffByOneKeys, RunnerUpController, ShuffledBlockMap, SimulationsCheck,
    SimulationsParams, WrongKTopK, WrongPointMemory, argmax_controller, dsm_output,
    simulate_interpolation, simulate_knn, simulate_lsh, simulate_scaling, simulate_switch,
)
from proofs_checks.strategies import lipschitz_targets

seeds = st.integers(0, 2**31 - 1)
SMALL = SimulationsParams(n_instances=8)


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


# ------------------------------------------------------------------ planted objects, one by one
@given(seeds)
def test_shuffled_block_map_is_a_derangement(seed):
    rng = np.random.default_rng(seed)
    for ell in range(2, 10):
        perm = ShuffledBlockMap()(ell, rng)
        assert sorted(perm.tolist()) == list(range(ell))
        assert (perm != np.arange(ell)).all()
    assert ShuffledBlockMap()(1, rng).tolist() == [0]


def test_planted_objects_break_their_identity():
    f = RandomPolynomial(4, 3, seed=1)
    o = simulate_interpolation(f, 20, 3, memory=WrongPointMemory())
    assert o.max_abs_difference > 1e-3 and o.max_active == 1
    o = simulate_knn(f, 50, 3, 40, 3, topk=WrongKTopK(-1))
    assert o.max_abs_difference > 1e-3 and o.max_active == 2
    o = simulate_knn(f, 50, 3, 40, 3, topk=WrongKTopK(+1))
    assert o.max_active == 4  # k + 1 ones: not in DSM(d, k, n)
    o = simulate_switch(5, 4, 3, 40, 3, block_map=ShuffledBlockMap())
    assert o.max_abs_difference > 1e-3 and o.max_active == 3
    o = simulate_scaling(5, 3, 4, 40, 3, controller=RunnerUpController())
    assert o.max_abs_difference > 1e-3 and o.max_active == 3
    o = simulate_lsh(f, 2, 3, 400, 40, 3, mask_hasher=OffByOneKeys)
    assert o.max_abs_difference > 1e-6 and o.max_active == 2
    with pytest.raises(ValueError, match="offset"):
        WrongKTopK(0)


# ------------------------------------------------------------------ the registered check
def test_simulations_check_is_an_exact_identity_with_full_power():
    r = SimulationsCheck(SMALL).run(0)
    assert r.raw_verdict == Verdict.HOLDS and r.verdict == Verdict.EXACT_IDENTITY
    assert r.measured <= TOLERANCE and r.power_lower >= 0.8
    assert {d["planted"] for d in r.power_details} == {
        "interpolation_wrong_point", "knn_k_plus_1", "knn_k_minus_1", "switch_shuffled_blocks",
        "scaling_runner_up", "lsh_keys_off_by_one"}
    assert r.details["calibration"].startswith("none") and "rule" in r.preregistered


@pytest.mark.parametrize("planted", SimulationsCheck(SMALL).planted_violations(),
                         ids=lambda p: p.name)
def test_every_planted_non_identity_is_refuted(planted):
    for seed in (0, 1, 2):
        r = planted.build().decide(seed)
        assert r.verdict == Verdict.REFUTED, (planted.name, seed)
        assert "diagnosis" in r.details


class _ShiftedLabel:
    """The interpolating DSM stores f(x_0) + shift at x_0 (a memory off by ``shift``)."""

    def __init__(self, shift):
        self.shift = shift

    def __call__(self, target, X, rng):
        y = target(X)
        y[0] += self.shift
        return X, y


@pytest.mark.parametrize("shift, verdict", [(0.9 * TOLERANCE, Verdict.HOLDS),
                                            (1.1 * TOLERANCE, Verdict.REFUTED)])
def test_tolerance_threshold_flips_with_a_memory_off_by_a_hair(shift, verdict):
    r = SimulationsCheck(SMALL, {"interpolation": {"memory": _ShiftedLabel(shift)}}).decide(0)
    assert r.verdict == verdict
    assert r.measured == pytest.approx(shift, rel=1e-6)


def _dead_unit_controller(scores, preact):
    """argmax per block plus one unit of block 0 whose ReLU is off: the output is unchanged,
    the mask has s + 1 ones where such a unit exists."""
    mask = argmax_controller(scores, preact)
    dead = (preact[:, 0, :] <= 0) & ~mask[:, 0, :]  # (N, size)
    rows = np.flatnonzero(dead.any(axis=1))
    mask[rows, 0, np.argmax(dead[rows], axis=1)] = True
    return mask


def test_sparsity_threshold_flips_with_one_extra_inactive_unit():
    holds = SimulationsCheck(SMALL, {"scaling": {"controller": argmax_controller}}).decide(0)
    assert holds.verdict == Verdict.HOLDS
    r = SimulationsCheck(SMALL, {"scaling": {"controller": _dead_unit_controller}}).decide(0)
    sim = r.details["per_simulation"]["scaling"]
    assert sim["max_abs_difference"] <= TOLERANCE  # same outputs: only the mask count differs
    assert sim["n_not_sparse"] > 0 and r.verdict == Verdict.REFUTED


def test_determinism_and_validation():
    a, b = SimulationsCheck(SMALL).decide(7), SimulationsCheck(SMALL).decide(7)
    assert a.measured == b.measured and a.details == b.details
    with pytest.raises(ValueError, match="n_instances"):
        SimulationsCheck(SimulationsParams(n_instances=0)).decide(0)
    with pytest.raises(ValueError, match="max_dim"):
        SimulationsCheck(SimulationsParams(max_dim=1)).decide(0)
    with pytest.raises(ValueError, match="objects"):
        SimulationsCheck(SMALL, {"nope": {}})


def test_dsm_output_shapes():
    assert dsm_output(np.ones(3), np.eye(3, dtype=bool), np.full((3, 3), 2.0)).tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="need A"):
        dsm_output(np.ones(3), np.eye(2, dtype=bool), np.ones((2, 2)))
