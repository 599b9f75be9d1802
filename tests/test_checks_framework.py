"""The check framework: Clopper–Pearson decisions, draws needed, registry, CLI."""

import json
import math
from dataclasses import dataclass

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from proofs_checks import _framework as fw
from proofs_checks._framework import (
    Check, CheckParams, Verdict, child_seeds, combine_verdicts, decide_probability,
    decide_probability_bounds, draws_to_decide, quantile_upper_bound, to_jsonable,
)
from proofs_checks.cli import check_command, format_table, run_checks, write_checks
from proofs_checks.registry import CHECK_MODULES, all_checks, get_check

EXPECTED = ["simulations", "collisions", "lipschitz_certificates", "lsh_vs_uniform",
            "eq1_flops", "lemma42_diameter", "lemma42_table_size",
            "theorem43_dense_lower_bound", "theorem41_learner", "theoremB1_manifold"]


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.floats(0.05, 0.95))
def test_decision_follows_the_exact_interval(counts, p):
    k, n = counts
    d = decide_probability(k, n, p)
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    assert (d.ci_low, d.ci_high) == pytest.approx((ci.low, ci.high))
    expected = (Verdict.HOLDS if ci.low >= p else Verdict.REFUTED if ci.high < p
                else Verdict.INCONCLUSIVE)
    assert d.verdict == expected
    assert (d.draws_needed == 0) == (expected != Verdict.INCONCLUSIVE) or d.draws_needed is None


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.floats(0.1, 0.9))
def test_draws_needed_decides_at_the_observed_rate(counts, p):
    k, n = counts
    extra = draws_to_decide(k, n, p, max_draws=10**6)
    if k / n == p:
        assert extra is None
        return
    if extra is None:  # the rate is too close to p for a million draws
        N = 10**6
        kk = round(k / n * N)
        assert decide_probability(kk, N, p).verdict == Verdict.INCONCLUSIVE
        return
    N = n + extra
    kk = min(N, max(0, round(k / n * N)))
    assert decide_probability(kk, N, p).verdict != Verdict.INCONCLUSIVE


def test_known_values():
    # 36 successes out of 36 certify 0.9 (0.025^(1/36) = 0.9026), 35/35 do not (0.89997)
    assert decide_probability(36, 36, 0.9).verdict == Verdict.HOLDS
    d = decide_probability(35, 35, 0.9)
    assert d.verdict == Verdict.INCONCLUSIVE and d.draws_needed == 1
    assert decide_probability(0, 30, 0.9).verdict == Verdict.REFUTED
    assert decide_probability(17, 17, 0.8).verdict == Verdict.HOLDS
    assert decide_probability(16, 16, 0.8).verdict == Verdict.INCONCLUSIVE


def test_bracketed_decision():
    assert decide_probability_bounds(40, 40, 40, 0.9).verdict == Verdict.HOLDS
    assert decide_probability_bounds(0, 5, 40, 0.9).verdict == Verdict.REFUTED
    d = decide_probability_bounds(10, 40, 40, 0.9)  # could be anything: undecided
    assert d.verdict == Verdict.INCONCLUSIVE
    with pytest.raises(ValueError, match="certain"):
        decide_probability_bounds(5, 4, 10, 0.9)


@given(st.lists(st.floats(0, 10), min_size=1, max_size=300), st.floats(0.5, 0.95))
def test_quantile_upper_bound_is_the_first_certified_order_statistic(values, p):
    v = quantile_upper_bound(values, p)
    n = len(values)
    srt = np.sort(values)
    counts = [s for s in range(1, n + 1) if decide_probability(s, n, p).verdict == Verdict.HOLDS]
    if not counts:
        assert v is None
    else:
        assert v == srt[counts[0] - 1]


def test_combine_seeds_and_json():
    assert combine_verdicts(["holds", "holds"]) == Verdict.HOLDS
    assert combine_verdicts(["holds", "inconclusive"]) == Verdict.INCONCLUSIVE
    assert combine_verdicts(["inconclusive", "refuted"]) == Verdict.REFUTED
    assert combine_verdicts(["holds", "out of reach"]) == Verdict.OUT_OF_REACH
    assert combine_verdicts(["out of reach", "inconclusive"]) == Verdict.INCONCLUSIVE
    assert combine_verdicts(["exact identity"] * 2) == Verdict.EXACT_IDENTITY
    assert combine_verdicts(["exact identity", "holds"]) == Verdict.HOLDS
    assert combine_verdicts(["holds", "underpowered"]) == Verdict.UNDERPOWERED
    assert combine_verdicts(["out of reach", "refuted"]) == Verdict.REFUTED
    with pytest.raises(ValueError):
        combine_verdicts([])
    assert child_seeds(3, 4, 1) == child_seeds(3, 4, 1)
    assert child_seeds(3, 4, 1) != child_seeds(3, 4, 2)
    assert len(set(child_seeds(0, 100))) == 100
    out = to_jsonable({"a": np.float64(math.nan), "b": np.arange(3), "c": Verdict.HOLDS,
                       "d": (np.int32(1), np.bool_(True)), "e": -math.inf})
    assert out == {"a": "nan", "b": [0, 1, 2], "c": "holds", "d": [1, True], "e": "-inf"}
    json.dumps(out)


def test_registry_has_every_check_in_order():
    checks = all_checks()
    assert list(checks) == EXPECTED
    assert len(CHECK_MODULES) == len(EXPECTED)
    for name, cls in checks.items():
        assert cls.name == name and "Baykal" in cls.source and cls.claim
        for preset in ("quick", "full"):
            params = cls.Params.preset(preset)
            params.validate()
    with pytest.raises(ValueError, match="known checks"):
        get_check("nope")
    with pytest.raises(ValueError, match="preset"):
        checks["simulations"].Params.preset("medium")


@dataclass(frozen=True)
class _Params(CheckParams):
    outcome: str = "refuted"


class _Planted(Check):
    name = "planted_for_test"
    claim = "a claim that is false"
    source = "nowhere"
    Params = _Params

    def _run(self, seed, out):
        return self.result(seed=seed, measured=0.0, bound=1.0, measured_text="0",
                           bound_text="1", verdict=Verdict(self.params.outcome), details={})


def test_check_boundary_errors():
    with pytest.raises(ValueError, match="params"):
        _Planted(params=object())
    with pytest.raises(ValueError, match="seed"):
        _Planted().run(-1)
    r = _Planted().run(3)
    # it ships no planted violation: whatever its data say, it could not have failed
    assert r.seed == 3 and r.seconds >= 0 and r.raw_verdict == Verdict.REFUTED
    assert r.verdict == Verdict.UNDERPOWERED and r.power is None
    assert _Planted().decide(3).verdict == Verdict.REFUTED
    assert "planted_for_test" in format_table([r])


def test_cli_table_json_and_exit_codes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # runs without --out write into runs/<preset>/checks
    runner = CliRunner()
    res = runner.invoke(check_command, ["--only", "collisions", "--json",
                                       str(tmp_path / "r.json"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "collisions" in res.output and "holds" in res.output
    payload = json.loads((tmp_path / "r.json").read_text())
    assert [r["name"] for r in payload["results"]] == ["collisions"]
    assert (tmp_path / "o" / "collisions" / "collisions.png").stat().st_size > 0
    assert (tmp_path / "o" / "results.json").exists()
    res = runner.invoke(check_command, ["--only", "no_such_check"])
    assert res.exit_code == 2 and "known checks" in res.output
    fw.register(_Threshold)
    try:
        res = runner.invoke(check_command, ["--only", "threshold_for_test"])
        assert res.exit_code == 0 and "threshold_for_test: holds" in res.output
        assert "power     1.00" in res.output and "settings  threshold=1" in res.output
        fw.register(_Threshold)  # registering the same class again is harmless
    finally:
        fw.REGISTRY.pop("threshold_for_test")


def test_run_checks_is_deterministic():
    a = run_checks("quick", None, only=["simulations"], seed=5, progress=False)[0]
    b = run_checks("quick", None, only=["simulations"], seed=5, progress=False)[0]
    assert a.details == b.details and a.measured == b.measured
    with pytest.raises(ValueError, match="preset"):
        run_checks("medium", None)
    with pytest.raises(ValueError, match="unknown check"):
        run_checks("quick", None, only=["x"])


def test_write_checks_returns_the_files_it_wrote(tmp_path):
    files = write_checks(tmp_path, "quick", only=["simulations"])
    assert all(f.exists() and f.stat().st_size > 0 for f in files)
    assert {f.name for f in files} == {"results.json", "table.txt", "simulations.png"}


# --- power: a check whose decision rule is "refuted when the measured size exceeds a
# threshold", measured on a real object (an effect of a given size plus noise drawn from
# the seed). Moving the threshold or the planted size across the line flips the verdict.

@dataclass(frozen=True)
class _ThresholdParams(CheckParams):
    threshold: float = 1.0
    n_power: int = 20


class _Threshold(Check):
    name = "threshold_for_test"
    claim = "the effect is at most 1"
    source = "test"
    rule = "refuted when the measured effect exceeds threshold"
    Params = _ThresholdParams

    def __init__(self, params=None, effect=0.0, bad_fraction=None):
        super().__init__(params)
        self.effect = effect
        self.bad_fraction = bad_fraction

    def planted_violations(self):
        return [fw.Planted("effect_3", "an effect of 3, three times what the claim allows",
                           lambda: _Threshold(self.params, effect=3.0,
                                              bad_fraction=self.bad_fraction))]

    def _run(self, seed, out):
        rng = np.random.default_rng(seed)
        measured = self.effect + 0.1 * rng.standard_normal()
        if self.bad_fraction is not None:  # an effect that shows in a known fraction of seeds
            measured = self.effect if rng.uniform() < self.bad_fraction else 0.0
        verdict = Verdict.REFUTED if measured > self.params.threshold else Verdict.HOLDS
        return self.result(seed=seed, measured=measured, bound=self.params.threshold,
                           measured_text=f"{measured:.3g}", bound_text="≤ threshold",
                           verdict=verdict, details={})


def test_a_blind_check_reports_underpowered():
    good = _Threshold().run(0)
    assert good.raw_verdict == Verdict.HOLDS and good.power == 1.0
    assert good.verdict == Verdict.HOLDS
    blind = _Threshold(_ThresholdParams(threshold=math.inf)).run(0)
    assert blind.raw_verdict == Verdict.HOLDS and blind.power == 0.0
    assert blind.verdict == Verdict.UNDERPOWERED
    # the planted size moved below the threshold: the planted runs are no longer refuted
    assert _Threshold(_ThresholdParams(threshold=3.5)).run(0).verdict == Verdict.UNDERPOWERED


def test_power_threshold_is_point_estimate_0_9():
    # fractions of refuting planted runs around 0.9 (20 runs): the verdict flips there
    verdicts = {}
    for frac in (0.6, 0.8, 0.95, 1.0):
        r = _Threshold(bad_fraction=frac).run(1)
        verdicts[frac] = (r.power, r.verdict)
        assert r.verdict == (Verdict.HOLDS if r.power >= 0.9 else Verdict.UNDERPOWERED)
    assert {v for _, v in verdicts.values()} == {Verdict.HOLDS, Verdict.UNDERPOWERED}


def test_measure_power_counts_and_interval():
    planted = _Threshold().planted_violations()[0]
    est = fw.measure_power(planted, [1, 2, 3, 4, 5])
    assert est.refuted == 5 and est.runs == 5 and est.power == 1.0
    ci = stats.binomtest(5, 5).proportion_ci(0.95, method="exact")
    assert (est.ci_low, est.ci_high) == pytest.approx((ci.low, ci.high))
    with pytest.raises(ValueError, match="seeds"):
        fw.measure_power(planted, [])


def test_final_verdict_table():
    fv = fw.final_verdict
    assert fv(Verdict.HOLDS, 0.9) == Verdict.HOLDS
    assert fv(Verdict.HOLDS, 0.89) == Verdict.UNDERPOWERED
    assert fv(Verdict.REFUTED, 0.5) == Verdict.UNDERPOWERED
    assert fv(Verdict.REFUTED, 1.0) == Verdict.REFUTED
    assert fv(Verdict.HOLDS, None) == Verdict.UNDERPOWERED
    assert fv(Verdict.OUT_OF_REACH, None) == Verdict.OUT_OF_REACH
    assert fv(Verdict.HOLDS, 1.0, identity=True) == Verdict.EXACT_IDENTITY
    assert fv(Verdict.REFUTED, 1.0, identity=True) == Verdict.REFUTED
    with pytest.raises(ValueError, match="power"):
        fv(Verdict.HOLDS, 1.5)


def test_result_carries_preregistration_and_json_fields():
    r = _Threshold().run(2)
    d = r.to_dict()
    for key in ("preregistered", "power", "power_interval", "verdict", "raw_verdict",
                "details", "settings", "power_details"):
        assert key in d
    assert d["preregistered"]["params"] == {"threshold": 1.0, "n_power": 20}
    assert d["preregistered"]["rule"] == _Threshold.rule
    assert d["preregistered"]["planted"] == {"effect_3": "an effect of 3, three times what "
                                                         "the claim allows"}
    assert d["power_details"][0]["runs"] == 20
    json.dumps(d)


def test_own_check_module_from_the_command_line(tmp_path, monkeypatch):
    import pathlib

    monkeypatch.chdir(tmp_path)  # runs without --out write into runs/<preset>/checks

    example = pathlib.Path(__file__).parent.parent / "examples" / "own_check.py"
    runner = CliRunner()
    res = runner.invoke(check_command, ["--module", str(example), "--json",
                                       str(tmp_path / "r.json")])
    try:
        assert res.exit_code == 0, res.output
        payload = json.loads((tmp_path / "r.json").read_text())
        (r,) = payload["results"]
        assert r["name"] == "sign_hash_collisions" and r["verdict"] == "holds"
        assert r["power"] >= 0.9 and r["preregistered"]["planted"]
        # loaded twice (e.g. a second command in one process): the same check again
        res = runner.invoke(check_command, ["--module", str(example), "--only",
                                           "sign_hash_collisions"])
        assert res.exit_code == 0, res.output
    finally:
        fw.REGISTRY.pop("sign_hash_collisions", None)
    res = runner.invoke(check_command, ["--module", str(tmp_path / "none.py")])
    assert res.exit_code == 2 and "module must be an existing .py file" in res.output
    (tmp_path / "empty.py").write_text("x = 1\n")
    res = runner.invoke(check_command, ["--module", str(tmp_path / "empty.py")])
    assert res.exit_code == 2 and "registered no check" in res.output
