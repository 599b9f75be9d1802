"""Lemma 4.2: family-wise control over the decisive parts of the two checks (Holm 1979).

Holm's adjustment moves a part across the refutation threshold both ways (a raw p-value just
under α is no longer a refutation in a larger family, and stays one when the family's other
p-values are small); members not run count at p = 1 and only ever raise the adjusted p-values;
the p-values agree with the intervals they come with (the bootstrap p from the interval's own
resamples, the binomial tail with the Clopper–Pearson interval); and both checks state their
family in the result."""

import numpy as np
import pytest

from inference.multiplicity import holm
from proofs_checks._framework import Verdict, decide_probability_bounds
from proofs_checks._scaling import InterpolatedQuantile, bootstrap_exponent, decide_exponent
from proofs_checks._family import (
    FAMILY_ALPHA, binomial_p_values, exponent_p_values, holm_family,
)
from proofs_checks.lemma42_diameter import DiameterParams, Lemma42DiameterCheck, PowerWidthHasher
from proofs_checks.lemma42_table_size import Lemma42TableSizeCheck

REFUTED, HOLDS, INCONCLUSIVE = (v.value for v in (Verdict.REFUTED, Verdict.HOLDS,
                                                  Verdict.INCONCLUSIVE))


def _part(p, verdict=None):
    """A part refuted at its own level when p ≤ α (as its interval would say)."""
    return {"verdict": verdict or (REFUTED if p <= FAMILY_ALPHA else HOLDS), "p_refute": p}


# -- the adjustment moves a part across the threshold ----------------------------------------
def test_holm_turns_a_raw_refutation_just_under_alpha_into_inconclusive():
    # raw p = 0.02 < α = 0.025; with a second member at p = 0.5 Holm doubles it: 0.04 > α
    parts, family = holm_family({"a": _part(0.02), "b": _part(0.5)}, ["a", "b"])
    assert parts["a"]["verdict_raw"] == REFUTED and parts["a"]["verdict"] == INCONCLUSIVE
    assert parts["a"]["p_adjusted"] == pytest.approx(0.04)
    assert family["m"] == 2 and family["alpha"] == FAMILY_ALPHA
    assert "Holm" in family["method"]


def test_holm_keeps_a_raw_refutation_when_the_other_member_is_refuted_first():
    # the same raw p = 0.02, the other member at 0.001: step-down, 2·0.001 then 1·0.02 ≤ α
    parts, _ = holm_family({"a": _part(0.02), "b": _part(0.001)}, ["a", "b"])
    assert parts["a"]["verdict"] == REFUTED and parts["b"]["verdict"] == REFUTED
    assert parts["a"]["p_adjusted"] == pytest.approx(0.02)
    # and a family of one leaves it as it is
    alone, family = holm_family({"a": _part(0.02)}, ["a"])
    assert alone["a"]["verdict"] == REFUTED and family["m"] == 1


def test_holm_never_turns_a_part_into_a_refutation_or_touches_holds():
    parts, _ = holm_family({"a": _part(0.2, INCONCLUSIVE), "b": _part(0.9, HOLDS),
                            "c": _part(0.001)}, ["a", "b", "c"])
    assert [parts[n]["verdict"] for n in "abc"] == [INCONCLUSIVE, HOLDS, REFUTED]
    assert parts["c"]["p_adjusted"] == pytest.approx(0.003)


def test_members_not_run_count_at_p_one_and_only_raise_the_adjusted_p():
    # a planted run of some parts alone: the others enter at p = 1. Its adjusted p-values are
    # ≥ those of the full family whatever the others' p-values, so its refutations imply the
    # full run's and the power it measures is a lower bound.
    parts, family = holm_family({"a": _part(0.012)}, ["a", "b"])
    assert family["not_run"] == ["b"] and family["m"] == 2
    assert parts["a"]["p_adjusted"] == pytest.approx(0.024) and parts["a"]["verdict"] == REFUTED
    parts, _ = holm_family({"a": _part(0.013)}, ["a", "b"])
    assert parts["a"]["verdict"] == INCONCLUSIVE  # 0.026 > α
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(2, 7))
        p = rng.uniform(0, 1, m) ** 3
        names = [f"p{i}" for i in range(m)]
        full = holm(p, FAMILY_ALPHA).p_adjusted
        run = rng.random(m) < 0.5
        run[int(rng.integers(m))] = True
        alone, _ = holm_family({n: _part(q) for n, q, r in zip(names, p, run) if r}, names)
        for i, n in enumerate(names):
            if run[i]:
                assert alone[n]["p_adjusted"] >= full[i] - 1e-15


# k = 1 only, as test_checks_lemma42's SMALL_D: a family of two (slope k=1, validation k=1)
SMALL_D = DiameterParams(ks=(1,), val_ks=(1,), n_draws=200, n_boot=300, C_sweep=(2, 16),
                         n_cmax=40)


def test_holm_moves_a_real_slope_refutation_across_the_threshold():
    # a real EuclideanLSH whose bucket diameters grow as ε^0.87 (deficit 0.13, between δ = 0.1
    # and the SVI 0.2). Seed 0: its interval lies below the line 1 − δ = 0.9 and its raw p is
    # 4/301 < α, but Holm over the family of two (the validation part, not run, at p = 1)
    # doubles it past α: not refuted, where a family of one would have refuted it.
    check = Lemma42DiameterCheck(SMALL_D, hasher_factory=PowerWidthHasher(0.87, 0.5),
                                 parts=("slope",))
    r = check.decide(0)
    part = r.details["parts"]["slope k=1"]
    assert part["ci"][1] < part["line"] == 0.9 and part["verdict_raw"] == REFUTED
    assert part["p_refute"] == pytest.approx(4 / 301)
    assert part["p_refute"] < FAMILY_ALPHA < part["p_adjusted"] == pytest.approx(8 / 301)
    assert part["verdict"] == INCONCLUSIVE and r.verdict == Verdict.INCONCLUSIVE
    assert "not after Holm" in r.details["diagnosis"]
    # a planted run is counted by this adjusted verdict: power goes through the family's rule
    assert check.part_verdict(r, "slope") == Verdict.INCONCLUSIVE
    alone, _ = holm_family({"slope k=1": {"verdict": REFUTED, "p_refute": part["p_refute"]}},
                           ["slope k=1"])
    assert alone["slope k=1"]["verdict"] == REFUTED
    # seed 1: raw p 1/301, adjusted 2/301 ≤ α: refuted by the family-wise rule
    part = check.decide(1).details["parts"]["slope k=1"]
    assert part["p_adjusted"] == pytest.approx(2 / 301) and part["verdict"] == REFUTED


def test_a_part_without_a_p_value_is_left_out_and_strangers_are_refused():
    parts, family = holm_family({"a": _part(0.02), "b": {"verdict": INCONCLUSIVE}},
                                ["a", "b"])
    assert family["m"] == 1 and family["without_p"] == ["b"]
    assert parts["a"]["verdict"] == REFUTED and np.isnan(parts["b"]["p_adjusted"])
    with pytest.raises(ValueError, match="members"):
        holm_family({"c": _part(0.5)}, ["a"])
    with pytest.raises(ValueError, match="alpha"):
        holm_family({"a": _part(0.5)}, ["a"], alpha=1.5)


# -- the p-values agree with the intervals ----------------------------------------------------
@pytest.mark.parametrize("side", ["at_least", "at_most"])
def test_bootstrap_p_values_agree_with_the_percentile_interval(side):
    rng = np.random.default_rng(3)
    x = np.array([2.0, 4.0, 8.0, 16.0])
    stat = InterpolatedQuantile(0.9)
    n_boot, decided = 300, {REFUTED: 0, HOLDS: 0, INCONCLUSIVE: 0}
    for trial in range(60):
        slope = rng.uniform(0.6, 1.4)
        reps = [xi ** slope * rng.lognormal(0, 0.5, 40) for xi in x]
        line = 1.0 + rng.uniform(-0.2, 0.2)
        est = bootstrap_exponent(x, reps, stat, n_boot=n_boot, seed=trial)
        p_refute, p_hold = exponent_p_values(est, line, side)
        verdict = decide_exponent(est, line, 0.0, side).value
        decided[verdict] += 1
        slack = 2 / (n_boot + 1)  # the interval's end interpolates between order statistics
        if p_refute <= FAMILY_ALPHA:
            assert verdict == REFUTED
        if verdict == REFUTED:
            assert p_refute <= FAMILY_ALPHA + slack
        if p_hold <= FAMILY_ALPHA:
            assert verdict == HOLDS
        if verdict == HOLDS:
            assert p_hold <= FAMILY_ALPHA + slack
        assert p_refute + p_hold == pytest.approx(1 + 1 / (n_boot + 1))  # no ties
    assert min(decided.values()) >= 3  # every outcome was met
    with pytest.raises(ValueError, match="side"):
        exponent_p_values(est, 1.0, "equal")


def test_binomial_p_values_agree_with_the_clopper_pearson_rule():
    n, claimed = 200, 0.9
    for possible in range(150, n + 1):
        for certain in (possible - 3, possible):
            d = decide_probability_bounds(certain, possible, n, claimed)
            p_refute, p_hold = binomial_p_values(certain, possible, n, claimed)
            assert (p_refute < FAMILY_ALPHA) == (d.verdict == Verdict.REFUTED)
            assert (p_hold <= FAMILY_ALPHA) == (d.verdict == Verdict.HOLDS)
    with pytest.raises(ValueError, match="certain"):
        binomial_p_values(5, 4, 10, 0.9)
    with pytest.raises(ValueError, match="claimed"):
        binomial_p_values(1, 2, 10, 1.0)


# -- the checks carry their family ------------------------------------------------------------
def test_the_families_of_the_quick_presets():
    d = Lemma42DiameterCheck.preset("quick")
    assert d.family_members() == ["slope k=1", "slope k=2", "validation k=1, eps=0.0078125",
                                  "validation k=2, eps=0.0078125"]
    assert len(Lemma42DiameterCheck.preset("full").family_members()) == 8
    t = Lemma42TableSizeCheck.preset("quick")
    assert t.family_members() == ["held-out ε k=1", "held-out ε k=2", "held-out k k=3",
                                  "held-out d k=1, d=8", "held-out d k=1, d=32"]
    assert len(Lemma42TableSizeCheck.preset("full").family_members()) == 6
