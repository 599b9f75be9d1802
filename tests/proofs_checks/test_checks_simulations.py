"""§3: DSM simulates interpolation, k-NN, Switch and Scaling layers and the LSH model —
exact identities (hypothesis property tests on random instances), their planted
non-identities (each departing on a fraction q of the instances, q = 0.25 at the SVI), and both
decision thresholds of the registered check (tolerance, sparsity)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lipschitz import RandomPolynomial
from proofs_checks._framework import Verdict
from proofs_checks.simulations import (
    FAILURE_SVI, SIMULATIONS, TOLERANCE, OffByOneKeys, RunnerUpController, ShuffledBlockMap, SimulationsCheck,
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
    with pytest.raises(ValueError, match="fraction"):
        WrongPointMemory(0.0)


# ------------------------------------------------------------------ the registered check
def test_simulations_check_is_an_exact_identity_with_power_at_every_svi():
    r = SimulationsCheck(SimulationsParams()).run(0)  # the quick parameters
    assert r.raw_verdict == Verdict.HOLDS and r.verdict == Verdict.EXACT_IDENTITY
    assert r.measured <= TOLERANCE and r.power_lower >= 0.8
    assert set(r.mdv) == set(SIMULATIONS)
    for part, pp in r.mdv.items():
        assert pp["mdv"] == FAILURE_SVI and not pp["underpowered"], part
        assert [c[0] for c in pp["curve"]] == [0.1, 0.25, 1.0]
    assert r.details["calibration"].startswith("none") and "rule" in r.preregistered


def test_simulations_tiny_preset_decides_nothing():
    r = SimulationsCheck.preset("tiny").run(0)
    assert r.verdict == Verdict.UNDERPOWERED and r.smoke


@pytest.mark.parametrize("planted", [p for p in SimulationsCheck(SMALL).planted_violations()
                                     if p.size in (None, 1.0)], ids=lambda p: p.name)
def test_every_always_departing_object_is_refuted(planted):
    for seed in (0, 1, 2):
        built = planted.build()
        r = built.decide(seed)
        assert r.verdict == Verdict.REFUTED, (planted.name, seed)
        assert "diagnosis" in r.details
        assert set(r.details["parts"]) == set(built.only)


@pytest.mark.parametrize("name, objects", [
    ("interpolation", {"memory": WrongPointMemory(0.25)}),
    ("knn", {"topk": WrongKTopK(+1, 0.25)}),
    ("scaling", {"controller": RunnerUpController(0.25)}),
])
def test_a_plant_at_the_svi_departs_on_a_quarter_of_the_instances(name, objects):
    p = SimulationsParams(n_instances=400)
    r = SimulationsCheck(p, {name: objects}, only=(name,)).decide(3)
    part = r.details["parts"][name]
    # 400 instances: a binomial 0.25 lies in [0.19, 0.31] with probability > 0.99
    assert 0.19 < part["n_failed"] / 400 < 0.31 and part["verdict"] == "refuted"
    low = SimulationsCheck(p, {name: {k: type(v)(*(
        (v.offset,) if isinstance(v, WrongKTopK) else ()), fraction=0.05)
        for k, v in objects.items()}}, only=(name,)).decide(3)
    assert low.details["parts"][name]["n_failed"] / 400 < 0.1  # the fraction moves it


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
    with pytest.raises(ValueError, match="only"):
        SimulationsCheck(SMALL, only=("nope",))


def test_dsm_output_shapes():
    assert dsm_output(np.ones(3), np.eye(3, dtype=bool), np.full((3, 3), 2.0)).tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="need A"):
        dsm_output(np.ones(3), np.eye(2, dtype=bool), np.ones((2, 2)))
