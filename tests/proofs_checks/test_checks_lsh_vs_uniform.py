"""LSH model vs uniform random hashing at equal buckets (Baykal et al. §1, §5): the paired
decision, its planted violation (a locality-free LSH) and both thresholds of the rule, moved
by a partly scrambled LSH."""

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from lipschitz import UniformCube
from proofs_checks._framework import Verdict
from proofs_checks.lsh_vs_uniform import (
    CURVE_ADVANTAGES, MIN_EFFECT, SHORTFALL_SVI, SVI_ADVANTAGE, LSHvsUniformCheck,
    LSHvsUniformParams, PartlyUniformLSH, ScrambledHyperplaneLSH, decide_paired, paired_interval,
    plant_calibration, plant_fraction, resolution_band,
)

# one cell, few points: about 0.1 s a decision
ONE_CELL = LSHvsUniformParams(targets=("hypercube",), n_bits=(6,), n_train=4096, n_test=1024,
                              n_seeds=6, n_power=14, n_calibration=20)


def _partly_scrambled(q):
    return LSHvsUniformCheck(ONE_CELL, lsh_factory=lambda d, m, s: ScrambledHyperplaneLSH(
        d, m, s, scramble_fraction=q))


def test_real_lsh_beats_uniform_in_one_cell_and_the_planted_lsh_does_not():
    r = LSHvsUniformCheck(ONE_CELL).run(0)
    cell = r.details["cells"][0]
    assert r.raw_verdict == Verdict.HOLDS and cell["ci_high"] < -MIN_EFFECT
    assert cell["nmse_uniform_mean"] == pytest.approx(cell["uniform_expected"], abs=0.05)
    assert r.power_lower >= 0.8 and r.verdict == Verdict.HOLDS
    band = r.details["resolution"]["unresolved_advantages"]
    assert band[0] < MIN_EFFECT < band[1] and "not resolved" in r.measured_text
    assert r.post_hoc and "2^4" in r.post_hoc[0]
    (planted,) = [p.build() for p in LSHvsUniformCheck(ONE_CELL).planted_violations()
                  if p.name == "scrambled_lsh"]
    for seed in (0, 1, 2):
        p = planted.decide(seed)
        assert p.verdict == Verdict.REFUTED and "diagnosis" in p.details
        assert abs(p.measured) < MIN_EFFECT / 2  # no advantage, as planted


# The rule's two thresholds, crossed by the fraction q of scrambled points (seed 0; the
# intervals' ends sit within 0.01 of −δ = −0.105 on both sides of each flip).
@pytest.mark.parametrize("q, verdict, side", [
    (0.20, Verdict.HOLDS, "ci_high"), (0.22, Verdict.INCONCLUSIVE, "ci_high"),
    (0.36, Verdict.INCONCLUSIVE, "ci_low"), (0.38, Verdict.REFUTED, "ci_low")])
def test_thresholds_flip_with_the_fraction_of_scrambled_points(q, verdict, side):
    r = _partly_scrambled(q).decide(0)
    cell = r.details["cells"][0]
    assert abs(cell[side] + MIN_EFFECT) < 0.012  # just at the threshold
    assert r.verdict == verdict
    if verdict == Verdict.INCONCLUSIVE:
        assert r.draws_needed is not None and r.draws_needed > 0


def test_one_refuted_cell_refutes_the_claim_and_all_must_hold():
    two = LSHvsUniformParams(targets=("hypercube", "polynomial"), n_bits=(6,), n_train=4096,
                             n_test=1024, n_seeds=6)
    r = LSHvsUniformCheck(two).decide(0)
    assert r.details["n_cells"] == 2
    assert r.details["cell_confidence"] == pytest.approx(1 - 0.05 / 2)
    verdicts = [c["verdict"] for c in r.details["cells"]]
    expected = (Verdict.HOLDS if all(v == "holds" for v in verdicts) else Verdict.REFUTED
                if "refuted" in verdicts else Verdict.INCONCLUSIVE)
    assert r.verdict == expected


def test_paired_interval_and_rule():
    d = np.array([-0.3, -0.2, -0.25, -0.35, -0.1])
    mean, sd, lo, hi = paired_interval(d, 0.95)
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / math.sqrt(5)
    assert (mean, lo, hi) == pytest.approx((d.mean(), d.mean() - half, d.mean() + half))
    assert decide_paired(-0.3, -0.2, 0.1) == Verdict.HOLDS
    assert decide_paired(-0.05, 0.1, 0.1) == Verdict.REFUTED
    assert decide_paired(-0.3, 0.0, 0.1) == Verdict.INCONCLUSIVE
    with pytest.raises(ValueError, match="differences"):
        paired_interval([0.1], 0.95)


def test_scrambled_lsh_has_no_locality_and_is_deterministic():
    X = UniformCube(8).sample(2000, seed=0)
    near = X + 1e-9  # the same points, moved by a hair
    h = ScrambledHyperplaneLSH(8, 8, seed=3)
    assert h.bucket_ids(X).shape == (2000, 1)
    assert (h.bucket_ids(X) == h.bucket_ids(X)).all()
    # unscrambled LSH keeps neighbours together; the scrambled one does not (1/256 by chance)
    assert (h.lsh.bucket_ids(X) == h.lsh.bucket_ids(near)).mean() > 0.99
    assert (h.bucket_ids(X) == h.bucket_ids(near)).mean() < 0.05
    q0 = ScrambledHyperplaneLSH(8, 8, seed=3, scramble_fraction=0.0)
    assert (q0.bucket_ids(X) == q0.lsh.bucket_ids(X)).all()
    with pytest.raises(ValueError, match="scramble_fraction"):
        ScrambledHyperplaneLSH(8, 8, scramble_fraction=1.5)


def test_determinism_and_validation():
    a, b = LSHvsUniformCheck(ONE_CELL).decide(5), LSHvsUniformCheck(ONE_CELL).decide(5)
    assert a.details == b.details
    for bad, name in [(dict(targets=("nope",)), "targets"), (dict(n_bits=()), "n_bits"),
                      (dict(n_bits=(0,)), "n_bits"), (dict(n_seeds=1), "n_seeds"),
                      (dict(delta=0.0), "delta"), (dict(confidence=1.0), "confidence"),
                      (dict(n_train=0), "n_train"), (dict(dim=0), "dim")]:
        with pytest.raises(ValueError, match=name):
            LSHvsUniformCheck(LSHvsUniformParams(**bad)).decide(0)
    with pytest.raises(ValueError, match="params"):
        LSHvsUniformCheck(object())


@pytest.mark.parametrize("sd, seeds", [(0.07, 10), (0.05, 20)])
def test_resolution_band_is_where_the_rule_has_power_0_8(sd, seeds):
    # true mean log ratio −(δ + band): "holds" in about 80 % of simulated seed sets; at
    # −(δ + band/2) well below 80 %; at −(δ − band): "refuted" in about 80 %
    conf = 1 - 0.05 / 6
    band = resolution_band(sd, seeds, conf)
    rng = np.random.default_rng(seeds)

    def rate(mean, verdict):
        hits = 0
        for _ in range(1000):
            _, _, lo, hi = paired_interval(mean + sd * rng.standard_normal(seeds), conf)
            hits += decide_paired(lo, hi, MIN_EFFECT) == verdict
        return hits / 1000

    assert 0.7 < rate(-(MIN_EFFECT + band), Verdict.HOLDS) < 0.86
    assert rate(-(MIN_EFFECT + band / 2), Verdict.HOLDS) < 0.5
    assert 0.7 < rate(-(MIN_EFFECT - band), Verdict.REFUTED) < 0.86
    assert resolution_band(0.0, 5, 0.95) == 0.0
    with pytest.raises(ValueError, match="n_seeds"):
        resolution_band(0.1, 1, 0.95)


# ------------------------------------------------------------------ SVI, plants and power


def test_svi_per_target_with_plants_at_it_and_a_curve_around_it():
    check = LSHvsUniformCheck(LSHvsUniformParams())
    svis = check.smallest_violations()
    assert [v.part for v in svis] == ["polynomial", "hypercube"]
    assert all(v.size == pytest.approx(math.log(0.95 / 0.9)) == SHORTFALL_SVI for v in svis)
    assert SHORTFALL_SVI == pytest.approx(MIN_EFFECT - SVI_ADVANTAGE)
    planted = check.planted_violations()
    for v in svis:
        mine = sorted((p for p in planted if p.part == v.part), key=lambda p: p.size)
        sizes = [p.size for p in mine]
        assert len(sizes) >= 3 and sizes[0] < v.size < sizes[-1]
        assert sizes[-1] == pytest.approx(MIN_EFFECT)  # no advantage at all
        (gate,) = [p for p in mine if p.size == v.size]
        assert gate.runs is None  # the gate: n_power runs
    # the shown plant does not gate
    assert [p.part for p in planted if p.name == "scrambled_lsh"] == [None]
    # each target's plants are named by the advantage they are calibrated to
    assert [p.name for p in planted if p.part == "hypercube"] == [
        "hypercube_advantage_7.5%", "hypercube_advantage_5.0%", "hypercube_advantage_0.0%"]


def test_partly_uniform_lsh_routes_a_fraction_q_uniformly():
    X = UniformCube(8).sample(4000, seed=0)
    lsh_only = PartlyUniformLSH(8, 6, seed=1, uniform_fraction=0.0)
    assert (lsh_only.bucket_ids(X) == lsh_only.lsh.bucket_ids(X)).all()
    uniform_only = PartlyUniformLSH(8, 6, seed=1, uniform_fraction=1.0)
    assert (uniform_only.bucket_ids(X) == uniform_only.uniform.bucket_ids(X)).all()
    half = PartlyUniformLSH(8, 6, seed=1, uniform_fraction=0.5)
    keys = half.bucket_ids(X)
    assert keys.shape == (4000, 1) and keys.min() >= 0 and keys.max() < 64
    routed = (keys != half.lsh.bucket_ids(X)).mean()  # uniform keys that differ from LSH's
    assert routed == pytest.approx(0.5 * 63 / 64, abs=0.03)
    with pytest.raises(ValueError, match="uniform_fraction"):
        PartlyUniformLSH(8, 6, uniform_fraction=-0.1)


def test_plant_calibration_puts_the_plant_at_the_svi():
    cal = plant_calibration(ONE_CELL, "hypercube")[6]
    assert cal["fractions"][-1] == 1.0 and cal["advantages"][-1] == 0.0
    assert np.all(np.diff(cal["advantages"]) <= 0)
    q = [plant_fraction(ONE_CELL, "hypercube", 6, a)
         for a in (CURVE_ADVANTAGES[0], SVI_ADVANTAGE, 0.0)]
    assert 0 < q[0] < q[1] < q[2] == 1.0
    # on fresh seeds (not the calibration's) the plant's advantage is the SVI's, within
    # twice the standard error of the mean over 36 seeds
    (gate,) = [p for p in LSHvsUniformCheck(ONE_CELL).planted_violations()
               if p.size == SHORTFALL_SVI]
    built = gate.build()
    assert built.cells == (("hypercube", 6),)
    D = np.concatenate([built.decide(100 + i).details["cells"][0]["log_ratios"]
                        for i in range(6)])
    assert -D.mean() == pytest.approx(SVI_ADVANTAGE, abs=2 * D.std(ddof=1) / math.sqrt(36))
    with pytest.raises(ValueError, match="n_bits"):
        plant_fraction(ONE_CELL, "hypercube", 8, SVI_ADVANTAGE)
    with pytest.raises(ValueError, match="target"):
        plant_calibration(ONE_CELL, "polynomial")


def test_the_power_gate_moves_with_the_seeds():
    # at 6 seeds the plant at the SVI is refuted in every run (power resolved, MDV ≤ SVI);
    # at 2 seeds (a t interval on 1 degree of freedom) it is not: underpowered, with what
    # would be needed
    resolved = LSHvsUniformCheck(ONE_CELL).run(0)
    pp = resolved.mdv["hypercube"]
    assert pp["power_lower"] >= 0.8 and pp["mdv"] <= SHORTFALL_SVI + 1e-12
    assert not pp["underpowered"] and resolved.verdict != Verdict.UNDERPOWERED
    assert resolved.power_lower >= 0.8 and resolved.svi[0]["part"] == "hypercube"
    few = LSHvsUniformCheck(replace(ONE_CELL, n_seeds=2)).run(0)
    pp = few.mdv["hypercube"]
    assert pp["underpowered"] and pp["power_lower"] < 0.8
    assert few.verdict == Verdict.UNDERPOWERED
    assert "these settings" in pp["needs"] or "more planted runs" in pp["needs"]


def test_cells_restrict_a_run_and_keep_the_bonferroni_level():
    two = LSHvsUniformParams(targets=("hypercube", "polynomial"), n_bits=(6, 8), n_train=2048,
                             n_test=512, n_seeds=4)
    full = LSHvsUniformCheck(two).decide(3)
    one = LSHvsUniformCheck(two, cells=(("polynomial", 8),)).decide(3)
    assert list(one.details["parts"]) == ["polynomial 2^8"]
    assert one.details["cell_confidence"] == full.details["cell_confidence"]
    # the same data as the full run's cell
    assert one.details["parts"]["polynomial 2^8"] == full.details["parts"]["polynomial 2^8"]
    with pytest.raises(ValueError, match="cells"):
        LSHvsUniformCheck(two, cells=(("polynomial", 10),))


def test_the_rule_refutes_a_plant_at_the_svi_and_rarely_one_just_below_it():
    # same ten seeds; a plant with a 9 % advantage (shortfall 0.011, below the SVI 0.054) is
    # refuted in 2 of them, the plant at the SVI (5 %) in all ten
    def refuted(advantage):
        q = plant_fraction(ONE_CELL, "hypercube", 6, advantage)
        check = LSHvsUniformCheck(ONE_CELL, lsh_factory=lambda d, b, s: PartlyUniformLSH(
            d, b, s, q))
        return sum(check.decide(1000 + i).verdict == Verdict.REFUTED for i in range(10))

    assert MIN_EFFECT - math.log(1 / 0.91) < SHORTFALL_SVI
    assert refuted(math.log(1 / 0.91)) <= 3
    assert refuted(SVI_ADVANTAGE) >= 9
