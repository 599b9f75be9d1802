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

EXPECTED = ["simulations", "collisions", "lipschitz_certificates", "eq1_flops",
            "lemma42_diameter", "lemma42_table_size", "theorem43_dense_lower_bound",
            "theorem41_learner"]


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
    assert r.seed == 3 and r.seconds >= 0 and r.verdict == Verdict.REFUTED
    assert "planted_for_test" in format_table([r])


def test_cli_table_json_and_exit_codes(tmp_path):
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
    fw.register(_Planted)
    try:
        res = runner.invoke(check_command, ["--only", "planted_for_test"])
        assert res.exit_code == 1 and "refuted" in res.output
    finally:
        fw.REGISTRY.pop("planted_for_test")


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
