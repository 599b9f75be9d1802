"""LSH collision probabilities: closed forms tested by exact binomial p-values with Holm across
them; each part's SVI plant (the law's scale off by 10 %) is refuted by that part; the
threshold flips with one collision more or less; the tiny preset decides nothing."""

import math

import numpy as np
import pytest

from proofs_checks._framework import Verdict, child_seeds
from proofs_checks.collisions import (
    PARTS, SCALE_SVI, CollisionsCheck, CollisionsParams, CorrelatedHyperplaneLSH,
    DegenerateHyperplaneLSH, binomial_p_value,
)
from routing.collision import (
    clopper_pearson, collision_probability_hyperplane, empirical_collision_rate,
    pairs_at_angles,
)
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH
from lipschitz import UniformCube

SMALL = CollisionsParams(distances=(0.1, 0.5, 1.0, 2.0), angles=(0.2, 1.0, 2.5), trials=1500,
                         n_power=10)


def test_collisions_hold_for_the_real_families():
    r = CollisionsCheck(SMALL).run(0)
    assert r.raw_verdict == Verdict.HOLDS and r.measured == 0
    assert r.details["n_intervals"] == 14
    assert r.details["interval_confidence"] == pytest.approx(1 - 0.05 / 14)
    # three angles and 1500 trials resolve less than the planted sizes: the verdict says so
    assert r.verdict == (Verdict.HOLDS if r.power_lower >= 0.8 else Verdict.UNDERPOWERED)


def test_each_part_refutes_its_svi_plant_at_the_quick_preset():
    check = CollisionsCheck.preset("quick")
    svis = check.smallest_violations()
    assert [v.part for v in svis] == list(PARTS) and {v.size for v in svis} == {SCALE_SVI}
    planted = check.planted_violations()
    for part in PARTS:
        mine = [p for p in planted if p.part == part]
        assert sorted(p.size for p in mine) == [0.05, 0.1, 0.2]  # a curve around the SVI
        (gate,) = [p for p in mine if p.size == SCALE_SVI]
        assert gate.runs is None
        built = gate.build()
        refuted = [built.part_verdict(built.decide(s), part) == Verdict.REFUTED
                   for s in child_seeds(3, 10, 5)]
        assert sum(refuted) >= 9, part


def test_collisions_tiny_preset_decides_nothing():
    r = CollisionsCheck.preset("tiny").run(0)
    assert r.verdict == Verdict.UNDERPOWERED and r.smoke
    assert set(r.mdv) == set(PARTS)


def test_a_slightly_wrong_width_is_below_the_resolution_of_2000_trials():
    # the docstring's power curve: width x 1.02 is (mostly) not refuted — the check does not
    # claim more resolution than it has
    check = CollisionsCheck(CollisionsParams(), euclidean_factory=lambda d, m, w, T, s:
                            EuclideanLSH(d, m, 1.02 * w, n_tables=T, seed=s))
    refuted = [check.decide(s).verdict == Verdict.REFUTED for s in range(6)]
    assert sum(refuted) <= 3


def test_degenerate_directions_scale_the_angle_law():
    Y = UniformCube(16).sample(1, seed=0)
    Y2 = pairs_at_angles(Y, 2.0, seed=1)
    h = DegenerateHyperplaneLSH(16, 3, 20_000, seed=2, fraction=0.1)
    bit = empirical_collision_rate(h, Y, Y2, level="hash")
    key = empirical_collision_rate(h, Y, Y2, level="key")
    law = 1 - 0.9 * 2.0 / math.pi  # 1 − (1 − r)θ/π
    assert bit.ci_low[0] <= law <= bit.ci_high[0]
    assert key.ci_low[0] <= law ** 3 <= key.ci_high[0]
    assert bit.ci_low[0] > collision_probability_hyperplane(2.0)  # the true law is refuted
    assert np.array_equal(DegenerateHyperplaneLSH(4, 2, 3, seed=1, fraction=0.0).directions,
                          CorrelatedHyperplaneLSH(4, 2, 3, seed=1, correlation=0.0).directions)
    with pytest.raises(ValueError, match="fraction"):
        DegenerateHyperplaneLSH(4, 2, fraction=1.0)


@pytest.mark.parametrize("trials, p", [(300, 0.3), (1500, 0.05), (40, 0.9)])
def test_binomial_p_value_inverts_the_clopper_pearson_interval(trials, p):
    # p lies outside the exact interval at 1 − a exactly when the p-value is below a
    k = np.arange(trials + 1)
    pv = binomial_p_value(k, trials, p)
    for a in (0.05, 0.01, 0.001):
        low, high = clopper_pearson(k, trials, 1 - a)
        assert np.array_equal(pv < a, (p < low) | (p > high))
    with pytest.raises(ValueError, match="successes"):
        binomial_p_value(np.array([trials + 1]), trials, p)
    Y = UniformCube(16).sample(1, seed=0)
    Y2 = pairs_at_angles(Y, 1.3, seed=1)
    h = CorrelatedHyperplaneLSH(16, 3, 20_000, seed=2, correlation=0.5)
    bit = empirical_collision_rate(h, Y, Y2, level="hash")
    key = empirical_collision_rate(h, Y, Y2, level="key")
    assert bit.ci_low[0] <= collision_probability_hyperplane(1.3) <= bit.ci_high[0]
    assert key.ci_low[0] > collision_probability_hyperplane(1.3, 3)  # bits agree together
    with pytest.raises(ValueError, match="correlation"):
        CorrelatedHyperplaneLSH(4, 2, correlation=1.0)


class _ScriptedKeys:
    """A key-level hasher whose pair i collides in exactly counts[i] of its tables: the first
    call (the points X) gets key 0 everywhere, the second (the partners) key 0 in the first
    counts[i] tables and 1 elsewhere."""

    def __init__(self, dim, n_tables, counts):
        self.dim, self.n_tables, self.counts, self.calls = dim, n_tables, counts, 0

    def bucket_ids(self, X):
        self.calls += 1
        keys = np.zeros((len(X), self.n_tables), np.int64)
        if self.calls > 1:
            keys[np.arange(self.n_tables)[None, :] >= np.asarray(self.counts)[:, None]] = 1
        return keys


def _scripted_check(first_count):
    p = SMALL
    conf = 1 - (1 - p.family_confidence) / (2 * (len(p.distances) + len(p.angles)))
    closed = collision_probability_hyperplane(np.asarray(p.angles), p.key_hashes)
    counts = np.round(closed * p.trials).astype(int)
    counts[0] = first_count

    def factory(d, m, T, s):
        if T == p.trials:  # the key-level part: scripted counts
            return _ScriptedKeys(d, T, counts)
        return HyperplaneLSH(d, m, n_tables=T, seed=s)

    return CollisionsCheck(p, hyperplane_factory=factory), closed[0], conf


def test_interval_threshold_flips_with_one_collision():
    _, p0, conf = _scripted_check(0)
    # the largest count whose exact interval ends below p0: just outside; one more: inside
    c = max(k for k in range(SMALL.trials + 1) if clopper_pearson(k, SMALL.trials, conf)[1] < p0)
    assert clopper_pearson(c + 1, SMALL.trials, conf)[1] >= p0
    outside = _scripted_check(c)[0].decide(0)
    inside = _scripted_check(c + 1)[0].decide(0)
    assert outside.verdict == Verdict.REFUTED and outside.measured == 1
    assert outside.details["per_family"]["hyperplane_key"]["outside"] == [True, False, False]
    assert outside.details["parts"]["hyperplane_key"]["verdict"] == "refuted"
    assert {v["verdict"] for k, v in outside.details["parts"].items()
            if k != "hyperplane_key"} == {"holds"}
    assert inside.verdict == Verdict.HOLDS and inside.measured == 0


def test_determinism_and_validation():
    a, b = CollisionsCheck(SMALL).decide(4), CollisionsCheck(SMALL).decide(4)
    assert a.details == b.details
    for bad, name in [(dict(trials=0), "trials"), (dict(width=0.0), "width"),
                      (dict(angles=(4.0,)), "angles"), (dict(key_hashes=0), "key_hashes"),
                      (dict(family_confidence=1.0), "family_confidence"),
                      (dict(n_power=0), "n_power")]:
        with pytest.raises(ValueError, match=name):
            CollisionsCheck(CollisionsParams(**bad)).decide(0)
    assert math.isclose(CollisionsCheck.preset("full").params.trials, 20_000)


def test_halving_the_holm_correction_changes_the_decision():
    """A key-level count whose closed form lies inside its exact interval at 1 − 0.05/m (m = 14
    closed forms: every distance and angle, per hash and per key) but outside the one at
    1 − 0.05/(m/2): Holm's first step (m·p ≤ α) does not reject it, the check holds. With half
    the correction (a family level of 0.90: α = 0.10) the same counts refute it. The intervals
    here are scipy's exact ones, not the check's."""
    from dataclasses import replace

    from scipy.stats import binomtest

    m = 2 * (len(SMALL.distances) + len(SMALL.angles))
    p0 = float(collision_probability_hyperplane(SMALL.angles[0], SMALL.key_hashes))

    def upper(count, level):
        return binomtest(count, SMALL.trials).proportion_ci(level, method="exact").high

    # the smallest count whose interval reaches p0, by bisection (the upper end grows with it)
    low, high = 0, SMALL.trials
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if upper(middle, 1 - 0.05 / m) >= p0 else (middle + 1, high)
    count = low
    assert upper(count, 1 - 0.05 / (m / 2)) < p0  # inside at the full correction only

    def check(params):
        closed = collision_probability_hyperplane(np.asarray(params.angles), params.key_hashes)
        counts = np.round(closed * params.trials).astype(int)
        counts[0] = count

        def factory(d, m_, T, s):
            if T == params.trials:  # the key-level part: scripted counts
                return _ScriptedKeys(d, T, counts)
            return HyperplaneLSH(d, m_, n_tables=T, seed=s)

        return CollisionsCheck(params, hyperplane_factory=factory).decide(0)

    corrected = check(SMALL)
    assert corrected.verdict == Verdict.HOLDS and corrected.measured == 0
    halved = check(replace(SMALL, family_confidence=0.90))
    assert halved.verdict == Verdict.REFUTED
    assert halved.details["per_family"]["hyperplane_key"]["outside"] == [True, False, False]
