"""The check framework: Clopper–Pearson decisions, draws needed, registry, CLI."""

import dataclasses
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
from proofs_checks.cli import check_command
from proofs_checks.run import format_table, run_checks, write_checks
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
        for preset in ("tiny", "quick", "full"):
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
        assert "power     20/20 refuted (effect_3), one-sided 95% lower bound 0.861" in \
            res.output and "settings  threshold=1" in res.output
        assert "svi       not declared" in res.output and "seeds     0: holds" in res.output
        fw.register(_Threshold)  # registering the same class again is harmless
    finally:
        fw.REGISTRY.pop("threshold_for_test")


def test_run_checks_is_deterministic():
    a = run_checks("tiny", None, only=["simulations"], seed=5, progress=False)[0]
    b = run_checks("tiny", None, only=["simulations"], seed=5, progress=False)[0]
    assert a.details == b.details and a.measured == b.measured
    with pytest.raises(ValueError, match="preset"):
        run_checks("medium", None)
    with pytest.raises(ValueError, match="unknown check"):
        run_checks("quick", None, only=["x"])


def test_write_checks_returns_the_files_it_wrote(tmp_path):
    files = write_checks(tmp_path, "tiny", only=["simulations"])
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


def test_power_gate_is_the_one_sided_lower_bound_0_8():
    # fractions of refuting planted runs around 0.9 (20 runs): the verdict flips where the
    # one-sided 95 % Clopper–Pearson lower bound crosses 0.8 (20/20: 0.861, 19/20: 0.784)
    verdicts = {}
    for frac in (0.6, 0.8, 0.95, 1.0):
        r = _Threshold(bad_fraction=frac).run(1)
        d = r.power_details[0]
        verdicts[frac] = (r.power, r.verdict)
        assert r.power_lower == pytest.approx(
            stats.binomtest(d["refuted"], d["runs"], alternative="greater")
            .proportion_ci(0.95, method="exact").low)
        assert r.verdict == (Verdict.HOLDS if r.power_lower >= 0.8 else Verdict.UNDERPOWERED)
    assert {v for _, v in verdicts.values()} == {Verdict.HOLDS, Verdict.UNDERPOWERED}
    assert fw.power_lower_bound(14, 14) >= 0.8 > fw.power_lower_bound(13, 13)
    assert fw.POWER_RUNS == 14


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
    assert fv(Verdict.HOLDS, 0.8) == Verdict.HOLDS
    assert fv(Verdict.HOLDS, 0.79) == Verdict.UNDERPOWERED
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
                "details", "settings", "power_details", "svi", "mdv", "power_lower",
                "seed_verdicts", "post_hoc"):
        assert key in d
    assert [s["verdict"] for s in d["seed_verdicts"]] == ["holds"] * fw.SEED_RUNS
    assert d["seed_verdicts"][0]["seed"] == 2 and d["preregistered"]["seed_rule"]
    assert d["preregistered"]["params"] == {"threshold": 1.0, "n_power": 20}
    assert d["preregistered"]["seeds"] == fw.SEED_RUNS and d["svi"] == [] and d["mdv"] == {}
    assert d["preregistered"]["rule"] == _Threshold.rule
    assert d["preregistered"]["planted"] == {"effect_3": "an effect of 3, three times what "
                                                         "the claim allows"}
    assert d["power_details"][0]["runs"] == 20
    json.dumps(d)


@pytest.mark.slow
def test_own_check_module_from_the_command_line(tmp_path, monkeypatch):
    import pathlib

    monkeypatch.chdir(tmp_path)  # runs without --out write into runs/<preset>/checks

    example = pathlib.Path(__file__).parents[2] / "examples" / "own_check.py"
    runner = CliRunner()
    res = runner.invoke(check_command, ["--module", str(example), "--json",
                                       str(tmp_path / "r.json")])
    try:
        assert res.exit_code == 0, res.output
        payload = json.loads((tmp_path / "r.json").read_text())
        (r,) = payload["results"]
        assert r["name"] == "sign_hash_collisions" and r["verdict"] == "holds"
        assert r["power"] >= 0.9 and r["preregistered"]["planted"]
        # loaded twice (e.g. a second command in one process): the same check again, here
        # as a tiny smoke run (a user's check gets a tiny preset from CheckParams.tiny too)
        res = runner.invoke(check_command, ["--module", str(example), "--only",
                                           "sign_hash_collisions", "--preset", "tiny"])
        assert res.exit_code == 0, res.output
        assert "sign_hash_collisions: underpowered (tiny)" in res.output
    finally:
        fw.REGISTRY.pop("sign_hash_collisions", None)
    res = runner.invoke(check_command, ["--module", str(tmp_path / "none.py")])
    assert res.exit_code == 2 and "module must be an existing .py file" in res.output
    (tmp_path / "empty.py").write_text("x = 1\n")
    res = runner.invoke(check_command, ["--module", str(tmp_path / "empty.py")])
    assert res.exit_code == 2 and "registered no check" in res.output


# --- per-part power at the SVI, MDV, Holm, seeds: a check of two parts "a" and "b", each
# refuted when its measured effect (plus noise drawn from the seed) exceeds half its SVI.

@dataclass(frozen=True)
class _PartsParams(CheckParams):
    noise: float = 0.05
    n_power: int = 14


class _Parts(Check):
    name = "parts_for_test"
    claim = "effects a and b are 0"
    source = "test"
    rule = "each part refuted when its effect exceeds 0.5 (half its SVI of 1)"
    Params = _PartsParams
    post_hoc = ("the noise level was lowered after a first look",)

    def __init__(self, params=None, a=0.0, b=0.0, svi_b=1.0, sizes=(0.5, 1.0, 2.0)):
        super().__init__(params)
        self.a, self.b, self.svi_b, self.sizes = a, b, svi_b, sizes

    def smallest_violations(self):
        return [fw.SVI("a", 1.0, "effect", "reason a"),
                fw.SVI("b", self.svi_b, "effect", "reason b")]

    def planted_violations(self):
        out = []
        for size in self.sizes:
            runs = None if size == 1.0 else 4
            # the plant of part "a" breaks b too (by 3): b's refutation must not count for a
            out.append(fw.Planted(f"a={size}", "a", lambda s=size: _Parts(self.params, a=s,
                                  b=3.0), part="a", size=size, runs=runs))
            out.append(fw.Planted(f"b={size}", "b", lambda s=size: _Parts(self.params, b=s),
                                  part="b", size=size, runs=runs))
        return out

    def _run(self, seed, out):
        rng = np.random.default_rng(seed)
        parts = {}
        for name, effect in (("a", self.a), ("b", self.b)):
            measured = effect + self.params.noise * rng.standard_normal()
            parts[name] = {"verdict": (Verdict.REFUTED if measured > 0.5 else
                                       Verdict.HOLDS).value, "measured": measured}
        verdict = combine_verdicts([v["verdict"] for v in parts.values()])
        return self.result(seed=seed, measured=0, bound=0.5, measured_text="-",
                           bound_text="0.5", verdict=verdict, details={"parts": parts})


def test_svi_declaration_is_validated():
    assert "0.25" in fw.SVI("x", 0.25, "u", "r").text()
    for bad in (dict(part=""), dict(size=0.0), dict(size=math.inf), dict(reason=" ")):
        with pytest.raises(ValueError, match="SVI"):
            fw.SVI(**{**dict(part="x", size=0.25, units="u", reason="r"), **bad})
    with pytest.raises(ValueError, match="part"):
        fw.Planted("p", "d", lambda: None, size=0.3)


def test_power_is_per_part_and_gates_at_the_svi():
    r = _Parts().run(0)
    assert r.verdict == Verdict.HOLDS and r.power_lower == pytest.approx(0.05 ** (1 / 14))
    assert set(r.mdv) == {"a", "b"}
    for part in ("a", "b"):
        pp = r.mdv[part]
        assert pp["mdv"] == 1.0 and not pp["underpowered"]
        assert [c[0] for c in pp["curve"]] == [0.5, 1.0, 2.0]
        assert pp["gate"]["runs"] == 14 and pp["gate"]["refuted"] == 14
    # the plant at a = 0.5 sits on the rule's line: about half refuted, though every run
    # breaks b: only the part's own verdict counts
    assert r.mdv["a"]["curve"][0][1] < 4
    text = format_table([r])
    assert "mdv       a: MDV 1 (SVI 1); at the SVI n=14, refuted 14, one-sided 95% lower" in text
    assert "post_hoc  the noise level was lowered after a first look" in text
    assert "svi       a: 1 (effect) — reason a" in text
    assert r.to_dict()["post_hoc"] == list(_Parts.post_hoc)


def test_an_svi_below_the_mdv_makes_the_check_underpowered():
    # part b's SVI moved to 0.5, the rule's own line: its plant there is refuted about half the
    # time, the MDV is 1 > 0.5 (or missing): underpowered, with what would be needed
    r = _Parts(svi_b=0.5, sizes=(0.5, 1.0, 2.0)).run(0)
    pp = r.mdv["b"]
    assert pp["underpowered"] and (pp["mdv"] is None or pp["mdv"] > 0.5)
    assert r.raw_verdict == Verdict.HOLDS and r.verdict == Verdict.UNDERPOWERED
    assert "these settings" in pp["needs"] or "more planted runs" in pp["needs"]
    # 13 of 13 at the SVI (bound 0.794) is not enough; 14 of 14 (0.807) is
    thirteen = _Parts(_PartsParams(n_power=13)).run(0)
    assert thirteen.verdict == Verdict.UNDERPOWERED and thirteen.raw_verdict == Verdict.HOLDS
    assert "needs 1 more planted runs" in thirteen.mdv["a"]["needs"]


def test_part_powers_mdv_and_needs():
    e = lambda size, k, n: fw.power_estimate(  # noqa: E731
        fw.Planted(f"p{size}", "", lambda: None, part="x", size=size), ["refuted"] * k
        + ["holds"] * (n - k))
    svi = fw.SVI("x", 0.25, "u", "r")
    (pp,) = fw.part_powers([svi], [e(0.125, 14, 14), e(0.25, 14, 14), e(0.5, 3, 3)])
    assert pp.mdv == 0.125 and not pp.underpowered
    (pp,) = fw.part_powers([svi], [e(0.25, 12, 14), e(0.5, 14, 14)])
    assert pp.mdv == 0.5 and pp.underpowered and "needs" in pp.needs
    (pp,) = fw.part_powers([svi], [e(0.25, 5, 14)])
    assert pp.mdv is None and pp.underpowered and pp.needs.startswith("these settings")
    (pp,) = fw.part_powers([svi], [])
    assert pp.gate is None and pp.underpowered and "plant a violation" in pp.needs
    # two plants at the SVI (e.g. two families): the worst one gates
    (pp,) = fw.part_powers([svi], [e(0.25, 14, 14), e(0.25, 10, 14)])
    assert pp.gate["refuted"] == 10 and pp.underpowered and len(pp.curve) == 1


def test_seed_rule_table():
    H, R, I, O = Verdict.HOLDS, Verdict.REFUTED, Verdict.INCONCLUSIVE, Verdict.OUT_OF_REACH
    assert fw.seed_rule([H, H, H]) == H
    assert fw.seed_rule([R, R, H]) == R and fw.seed_rule([R, H, H]) == I
    assert fw.seed_rule([R, I, H]) == I and fw.seed_rule([O, O, O]) == O
    assert fw.seed_rule([R, R, H, H]) == I  # half is not more than half
    ex = Verdict.EXACT_IDENTITY
    assert fw.seed_rule([ex, ex, ex]) == ex
    with pytest.raises(ValueError):
        fw.seed_rule([])


def test_seed_verdicts_show_an_unstable_check():
    # an effect that shows in half the seeds: the seeds disagree and the rule says so
    r = _Threshold(_ThresholdParams(), effect=3.0, bad_fraction=0.5).run(4)
    seen = [s["verdict"] for s in r.seed_verdicts]
    assert len(seen) == fw.SEED_RUNS and r.raw_verdict == fw.seed_rule(seen)
    check = _Threshold.preset("full")
    assert check.seed_runs == fw.SEED_RUNS_FULL and len(check.seed_list(0)) == 5
    assert len(set(check.seed_list(0))) == 5


def test_tiny_is_a_smoke_run_that_decides_nothing(monkeypatch):
    quick, tiny = _Threshold.preset("quick").run(0), _Threshold.preset("tiny").run(0)
    assert quick.verdict == Verdict.HOLDS and not quick.smoke and quick.note == ""
    # the same machinery, one seed and two planted runs: 2/2 refuted gives a lower bound of
    # 0.224, so the data's "holds" cannot pass the power gate
    assert tiny.smoke and tiny.note == fw.TINY_NOTE == "tiny: smoke run, decides nothing"
    assert [d["runs"] for d in tiny.power_details] == [fw.TINY_POWER_RUNS] == [2]
    assert len(tiny.seed_verdicts) == fw.SEED_RUNS_TINY == 1
    assert tiny.raw_verdict == Verdict.HOLDS and tiny.verdict == Verdict.UNDERPOWERED
    assert tiny.power_lower == pytest.approx(0.05 ** 0.5)
    assert tiny.preregistered["smoke"] and not quick.preregistered["smoke"]
    text = format_table([tiny])
    assert "threshold_for_test: underpowered (tiny) — tiny: smoke run, decides nothing" in text
    assert "threshold_for_test: holds" not in text and "no verdict below is a finding" in text
    assert "tiny" not in format_table([quick])
    assert tiny.settings.endswith("; tiny: 1 seed, at most 2 planted runs per plant")
    # even with enough planted runs to pass the gate (20/20: 0.861), tiny decides nothing
    monkeypatch.setattr(fw, "TINY_POWER_RUNS", 20)
    many = _Threshold.preset("tiny").run(0)
    assert many.power_lower >= fw.POWER_WANTED and many.verdict == Verdict.UNDERPOWERED


def test_tiny_cli_says_it_decides_nothing(tmp_path):
    fw.register(_Threshold)
    try:
        res = CliRunner().invoke(check_command, ["--only", "threshold_for_test", "--preset",
                                                 "tiny", "--json", str(tmp_path / "r.json"),
                                                 "--out", str(tmp_path / "o")])
        assert res.exit_code == 0, res.output
        assert "tiny: smoke run, decides nothing: 0 holds" in res.output
        assert "threshold_for_test: underpowered (tiny)" in res.output
        for path in (tmp_path / "r.json", tmp_path / "o" / "results.json"):
            payload = json.loads(path.read_text())
            assert payload["decides"] is False and payload["note"] == fw.TINY_NOTE
            assert payload["params"] == "tiny" and payload["results"][0]["smoke"] is True
        res = CliRunner().invoke(check_command, ["--only", "threshold_for_test", "--json",
                                                 str(tmp_path / "q.json")])
        payload = json.loads((tmp_path / "q.json").read_text())
        assert payload["decides"] is True and payload["results"][0]["verdict"] == "holds"
    finally:
        fw.REGISTRY.pop("threshold_for_test")


@pytest.mark.parametrize("name", EXPECTED)
def test_every_check_runs_its_planted_violations_at_tiny(name):
    check = get_check(name).preset("tiny")
    r = check.run(0)
    assert r.smoke and r.note == fw.TINY_NOTE and len(r.seed_verdicts) == 1
    assert r.verdict in (Verdict.UNDERPOWERED, Verdict.OUT_OF_REACH)
    planted = check.planted_violations()
    assert planted and [d["planted"] for d in r.power_details] == [p.name for p in planted]
    assert all(1 <= d["runs"] <= fw.TINY_POWER_RUNS for d in r.power_details)
    assert r.params == to_jsonable(dataclasses.asdict(get_check(name).Params.tiny()))


def test_holm_across_parts():
    parts = {"x": {"verdict": "refuted", "p_refute": 0.02},
             "y": {"verdict": "refuted", "p_refute": 0.02},
             "z": {"verdict": "holds"}}
    out = fw.holm_parts(parts)
    # Holm on two one-sided p-values of 0.02 at 0.025: adjusted 0.04 > 0.025, not refuted
    assert out["x"]["verdict"] == out["y"]["verdict"] == "inconclusive"
    assert out["x"]["p_adjusted"] == pytest.approx(0.04) and out["x"]["verdict_raw"] == "refuted"
    assert math.isnan(out["z"]["p_adjusted"]) and out["z"]["verdict"] == "holds"
    out = fw.holm_parts({**parts, "x": {"verdict": "refuted", "p_refute": 0.001}})
    # 0.001·2 ≤ 0.025 refutes x; then y alone: 0.02 ≤ 0.025 refutes y too (step-down)
    assert out["x"]["verdict"] == out["y"]["verdict"] == "refuted"
    assert parts["x"]["verdict"] == "refuted"  # the input is not modified


def test_with_power_counts_each_plants_own_runs():
    check = _Parts()
    runs = check.power_runs(0)
    assert len(runs) == 2 * (14 + 4 + 4)
    verdicts = {}
    for i, s in runs:
        verdicts.setdefault(i, []).append(check.planted_run(i, s))
    apart = check.with_power(check.run(0, power=False), verdicts, 1.0)
    together = check.run(0)
    assert apart.verdict == together.verdict and apart.mdv == together.mdv
    assert apart.seed_verdicts == together.seed_verdicts
    with pytest.raises(ValueError, match="planted runs"):
        check.with_power(together, {i: v[:3] for i, v in verdicts.items()}, 1.0)
