"""Theorem 4.1 (single-table LSH learner, n*(ε, k) scaling): the machinery against
independent computations, the two target families, every decision threshold crossed by a
planted object, each decisive part refuted on its plant at the SVI, what quick decides,
determinism and parameter errors."""

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from lipschitz import UniformSubspace
from proofs_checks._framework import Verdict
from proofs_checks._nstar import (
    BucketMeans, RidgeTarget, _Stream, censored_resample_probability, decide_censored_exponent,
    first_success, next_grid_value, quantile_count, sample_grid, spread_floor,
    theorem_samples,
)
from proofs_checks._scaling import ExponentEstimate
from inference.multiplicity import holm
from proofs_checks.theorem41_learner import (
    FAMILY_ALPHA, FLOORS_SVI, SAMPLES_SVI, TABLE_SVI, CoarseShare, FixedWidth, LearnerParams,
    ShrinkingWidth, TangentMLP, Theorem41LearnerCheck, ThinnedSamples, family_wise,
    floor_p_values, make_target,
)
from routing.euclidean_lsh import EuclideanLSH
from routing.lsh_table import LSHTable

# small settings: k = 1 over r ∈ [5.7, 45], 24 draws — about half a second per decision
SMALL = LearnerParams(epsilons=((1, (0.5, 0.25, 0.125, 0.0625)),), probes=(), n_draws=24,
                      n_calibration=6, n_test=300, n_boot=300, targets=("ridge",))


# the flips of the exponent rule need tighter intervals: 40 draws (about a second each)
MEDIUM = replace(SMALL, n_draws=40)
REF = Theorem41LearnerCheck(SMALL).reference_epsilons()


def part(result, name, k=1, case="ridge,d=8"):
    return result.details["parts"][f"{name} {case},k={k}"]


def per_k(result, k=1, case="ridge,d=8"):
    return result.details["cases"][case]["per_k"][str(k)]


# ------------------------------------------------------------------ machinery

@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(0, 10_000), st.integers(1, 4000))
def test_bucket_means_equal_lshtable(k, seed, n):
    subspace = UniformSubspace(6, k, seed=seed)
    f = RidgeTarget.in_span(subspace.basis, 1.0, seed)
    X, Xt = subspace.sample(n, seed=seed + 1), subspace.sample(300, seed=seed + 2)
    h = EuclideanLSH(6, 3 * k, 0.3, seed=seed)
    means = BucketMeans(h.bucket_ids(Xt)[:, 0])
    m = max(1, n // 2)
    keys = h.bucket_ids(X)[:, 0]
    means.add(keys[:m], f(X[:m]))
    means.add(keys[m:], f(X[m:]))
    pred, empty = LSHTable(h).fit(X, f(X)).predict(Xt, return_empty=True)
    value, found_empty = means.predict()
    np.testing.assert_array_equal(found_empty, empty[:, 0])
    np.testing.assert_allclose(value, pred, rtol=1e-12, atol=1e-12)
    assert means.n_buckets() == len(LSHTable(h).fit(X, f(X)).buckets_)


def test_first_success_is_the_first_grid_n_with_small_error():
    subspace = UniformSubspace(8, 1, seed=3)
    f = RidgeTarget.in_span(subspace.basis, 1.0, 4)
    Xt = subspace.sample(200, seed=5)
    grid = sample_grid(16, 20_000, 2 ** 0.5)
    eps = 0.25
    out = first_success(_Stream(subspace, 7), f, EuclideanLSH(8, 4, 0.75 * eps, seed=9), Xt,
                        f(Xt), eps, grid, floor_z=np.inf)
    # the same stream, the same hasher, LSHTable refitted from scratch at every grid n
    X = _Stream(subspace, 7).take(int(grid[-1]))
    h = EuclideanLSH(8, 4, 0.75 * eps, seed=9)
    errors = [np.max(np.abs(LSHTable(h).fit(X[:n], f(X[:n])).predict(Xt) - f(Xt)))
              for n in grid]
    first = next(n for n, e in zip(grid, errors) if e <= eps)
    assert out.n == first and not out.floor


@pytest.mark.parametrize("keep", [1.0, 0.5])
def test_the_learner_at_grid_n_holds_the_first_n_points_offered(monkeypatch, keep):
    """Past the first block of 4096 points (blocks grow with the points offered) the learner at
    grid value n still holds exactly the stream's first n points (keep = 1; with thinning, the
    kept ones among them), and the stream gives back what the stop left unused. Blocks once
    ended between grid values and the points after the last one were dropped: at n = 19,005
    the learner held 15,546."""
    import proofs_checks._first_passage as first_passage

    seen = []

    class Recording(first_passage.BucketMeans):
        def add_and_score(self, keys, y, slots, *args):
            result = super().add_and_score(keys, y, slots, *args)
            seen.append((self.n_points, np.concatenate(self._keys) if self._keys else None))
            return result

    monkeypatch.setattr(first_passage, "BucketMeans", Recording)
    subspace = UniformSubspace(8, 2, seed=3)
    f = RidgeTarget.in_span(subspace.basis, 1.0, 4)
    Xt = subspace.sample(3, seed=5)
    grid = sample_grid(100, 20_000, 1.3)
    h = EuclideanLSH(8, 4, 0.2, seed=9)
    stream = _Stream(subspace, 7)
    out = first_success(stream, f, h, Xt, f(Xt), 1e-9, grid, keep=keep, seed=2,
                        floor_z=np.inf)
    assert math.isinf(out.n) and len(seen) == len(grid)  # ε unreachable: every grid value
    X = _Stream(subspace, 7).take(int(grid[-1]) + 1)
    kept = (np.random.default_rng(2).random(len(X)) < keep if keep < 1 else
            np.ones(len(X), bool))
    for n, (n_points, keys) in zip(grid, seen):
        assert n_points == np.count_nonzero(kept[:n])
        np.testing.assert_array_equal(keys, h.bucket_ids(X[:n][kept[:n]])[:, 0])
    np.testing.assert_array_equal(stream.take(1), X[-1:])  # the next draw's first point


def test_grid_quantile_and_resample_probability():
    g = sample_grid(16, 1000, 2 ** 0.25)
    assert g[0] == 16 and g[-1] <= 1000 and np.all(np.diff(g) > 0)
    assert next_grid_value(16, int(g[-1]), 2 ** 0.25) > g[-1]
    assert quantile_count([5, 1, 4, 2, 3], 0.8) == 4  # the 4th smallest of 5
    assert quantile_count([1, 2, np.inf, np.inf, np.inf], 0.8) == np.inf
    # exact enumeration: the 8th smallest of 10 resampled draws is censored iff ≥ 3 censored
    for c in range(11):
        assert censored_resample_probability(c, 10, 0.8) == pytest.approx(
            stats.binom.sf(2, 10, c / 10))
    r = math.sqrt(8) / 0.25
    assert theorem_samples(1.0, 2, 8, 1.0, 0.25) == math.ceil(2 * r**2 * math.log(r))
    with pytest.raises(ValueError, match="exceed 1"):
        theorem_samples(1.0, 1, 1, 1.0, 2.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 5), st.sampled_from([1, 3, 20]))
def test_add_and_score_equals_add_predict_and_floor_z_bit_for_bit(seed, n_query, parts,
                                                                 min_count):
    """``first_success``'s fused pass against the separate calls it replaced: the same
    predictions, errors, violating fraction and floor z, exactly, step after step — with
    keys of no query bucket (slot −1), empty buckets, and a first step with no point."""
    rng = np.random.default_rng(seed)
    query = rng.integers(0, 12, n_query)
    y_query = rng.normal(0.0, 1.0, n_query)
    epsilon = float(rng.uniform(0.05, 1.0))
    fused, separate = BucketMeans(query), BucketMeans(query)
    for step in range(parts):
        size = 0 if step == 0 and seed % 3 == 0 else int(rng.integers(1, 300))
        keys = rng.integers(-2, 16, size)
        y = rng.normal(0.3, 1.0, size) * rng.choice([1.0, 0.0], size, p=[0.9, 0.1])
        pred, empty, err, bad, z = fused.add_and_score(keys, y, fused.slots(keys), y_query,
                                                       epsilon, min_count)
        separate.add(keys, y)
        want_pred, want_empty = separate.predict()
        want_err = np.abs(want_pred - y_query)
        violating = ~(want_err <= epsilon)
        np.testing.assert_array_equal(pred, want_pred)
        np.testing.assert_array_equal(empty, want_empty)
        np.testing.assert_array_equal(err, want_err)
        assert bad == np.count_nonzero(violating) / n_query
        with np.errstate(divide="ignore", invalid="ignore"):  # n = 1 at min_count 1
            want_z = separate.floor_z(y_query, epsilon, min_count, among=violating & ~want_empty)
        assert z == want_z
        assert fused.n_points == separate.n_points and fused.n_buckets() == separate.n_buckets()


def test_spread_floor_threshold():
    keys = np.array([3, 3, 7])
    assert spread_floor(keys, np.array([0.0, 0.51, 9.0]), 0.25)  # spread 0.51 > 2ε
    assert not spread_floor(keys, np.array([0.0, 0.49, 9.0]), 0.25)  # spread 0.49 ≤ 2ε


def test_floor_z_threshold():
    rng = np.random.default_rng(0)
    y = rng.uniform(-0.1, 0.1, 400)  # bucket mean ≈ 0, SE ≈ 0.003
    means = BucketMeans(np.array([0]))
    means.add(np.zeros(400, np.int64), y)
    se = y.std(ddof=1) / 20
    mean = y.mean()
    # a test point 0.3 + 6 SE from the mean, ε = 0.3: z ≈ 6 > 5; at 0.3 + 4 SE: z ≈ 4 < 5
    assert means.floor_z(np.array([mean + 0.3 + 6 * se]), 0.3) == pytest.approx(6, rel=1e-6)
    assert means.floor_z(np.array([mean + 0.3 + 4 * se]), 0.3) == pytest.approx(4, rel=1e-6)
    assert means.floor_z(np.array([mean + 0.3 + 6 * se]), 0.3, min_count=401) == 0.0


def _estimate(low, high, x=(1.0, 2.0, 4.0, 8.0)):
    return ExponentEstimate((low + high) / 2, low, high, 1000, 0.95, tuple(x), (1.0,) * len(x))


def test_exponent_rule_thresholds():
    # uncensored: the interval's ends against k + δ = 1.5
    assert decide_censored_exponent(_estimate(0.8, 1.49), [0] * 4, 30, 1, 0.5, 0.8)[0] == \
        Verdict.HOLDS
    assert decide_censored_exponent(_estimate(0.8, 1.51), [0] * 4, 30, 1, 0.5, 0.8)[0] == \
        Verdict.INCONCLUSIVE
    assert decide_censored_exponent(_estimate(1.51, 2.2), [0] * 4, 30, 1, 0.5, 0.8)[0] == \
        Verdict.REFUTED
    assert decide_censored_exponent(_estimate(1.49, 2.2), [0] * 4, 30, 1, 0.5, 0.8)[0] == \
        Verdict.INCONCLUSIVE
    # lower-bounded draws at high r can only lower the slope: no holds, refuted still valid
    p3 = censored_resample_probability(3, 30, 0.8)  # 0.026 > 0.025
    p2 = censored_resample_probability(2, 30, 0.8)  # 0.003
    assert p2 <= 0.025 < p3
    assert decide_censored_exponent(_estimate(0.8, 1.4), [0, 0, 0, 2], 30, 1, 0.5, 0.8)[0] == \
        Verdict.HOLDS
    assert decide_censored_exponent(_estimate(0.8, 1.4), [0, 0, 0, 3], 30, 1, 0.5, 0.8)[0] == \
        Verdict.OUT_OF_REACH
    assert decide_censored_exponent(_estimate(1.6, 2.4), [0, 0, 0, 9], 30, 1, 0.5, 0.8)[0] == \
        Verdict.REFUTED
    # ... at low r only raise it: no refutation, holds still valid
    assert decide_censored_exponent(_estimate(1.6, 2.4), [2, 0, 0, 0], 30, 1, 0.5, 0.8)[0] == \
        Verdict.REFUTED
    assert decide_censored_exponent(_estimate(1.6, 2.4), [3, 0, 0, 0], 30, 1, 0.5, 0.8)[0] == \
        Verdict.INCONCLUSIVE
    assert decide_censored_exponent(_estimate(0.8, 1.4), [9, 0, 0, 0], 30, 1, 0.5, 0.8)[0] == \
        Verdict.HOLDS


# ------------------------------------------------------------------ thresholds, end to end

def test_real_learner_holds_at_small_settings():
    r = Theorem41LearnerCheck(SMALL).decide(0)
    assert r.verdict == Verdict.HOLDS
    assert part(r, "samples")["estimate"]["ci_high"] <= 1.5
    rows = per_k(r)["settings"]
    assert all(row["constant"] > 10 for row in rows)  # the single table's constant ≫ 1
    assert "far above 1" in r.measured_text


def test_table_exponent_threshold_flips_with_the_width_power():
    below = Theorem41LearnerCheck(MEDIUM, width_rule=ShrinkingWidth(0.75, 1.0, REF, 0.2))
    above = Theorem41LearnerCheck(MEDIUM, width_rule=ShrinkingWidth(0.75, 1.0, REF, 0.9))
    rb, ra = below.decide(1), above.decide(1)
    assert part(rb, "table_size")["verdict"] == Verdict.HOLDS.value
    assert part(ra, "table_size")["verdict"] == Verdict.REFUTED.value
    assert part(rb, "table_size")["estimate"]["ci_high"] <= 1.5 < \
        part(ra, "table_size")["estimate"]["ci_low"]
    assert rb.verdict == Verdict.HOLDS and ra.verdict == Verdict.REFUTED


def test_sample_exponent_threshold_flips_with_the_thinning_power():
    # thinning leaves the buckets alone: only the sample exponent moves across k + δ
    rb = Theorem41LearnerCheck(MEDIUM, keep_rule=ThinnedSamples(REF, 0.2)).decide(2)
    ra = Theorem41LearnerCheck(MEDIUM, keep_rule=ThinnedSamples(REF, 1.5)).decide(2)
    assert part(rb, "samples")["verdict"] == Verdict.HOLDS.value
    assert part(ra, "samples")["verdict"] == Verdict.REFUTED.value
    assert part(rb, "samples")["estimate"]["ci_high"] <= 1.5 < \
        part(ra, "samples")["estimate"]["ci_low"]
    assert part(ra, "table_size")["estimate"]["exponent"] < 1.5
    assert rb.verdict == Verdict.HOLDS and ra.verdict == Verdict.REFUTED
    # the family: 3 parts of the one case; adjusted p-values are Holm's of the raw ones, and
    # a raw p ≤ 0.025 comes with an interval above the limit
    for r in (rb, ra):
        family = r.details["family"]
        assert family["size"] == 3 and family["method"] == "holm"
        raw = [m["p_raw"] for m in family["members"].values()]
        np.testing.assert_allclose([m["p_adjusted"] for m in family["members"].values()],
                                   holm(raw, FAMILY_ALPHA).p_adjusted)
        for name in ("samples", "table_size"):
            d = part(r, name)
            if d["p_refute"] <= 0.025:
                assert d["estimate"]["ci_low"] > d["limit"]
            if d["estimate"]["ci_low"] <= d["limit"]:
                assert d["p_refute"] > 0.025
    assert part(ra, "samples")["p_adjusted"] <= FAMILY_ALPHA
    assert part(rb, "samples")["p_refute"] > 0.5
    assert "Holm over 3 parts" in ra.measured_text and "p=" in ra.measured_text


class SometimesCoarse:
    """A hasher factory whose hasher is 40x too coarse with probability q (its own seed)."""

    def __init__(self, q):
        self.q = q

    def __call__(self, dim, n_hashes, width, seed):
        coarse = np.random.default_rng(seed + 1).random() < self.q
        return EuclideanLSH(dim, n_hashes, width * (40 if coarse else 1), seed=seed)


def test_floor_threshold_flips_with_the_share_of_coarse_hashers():
    rare = Theorem41LearnerCheck(MEDIUM, hasher_factory=SometimesCoarse(0.05)).decide(0)
    common = Theorem41LearnerCheck(MEDIUM, hasher_factory=SometimesCoarse(0.6)).decide(0)
    assert part(rare, "floors")["verdict"] == Verdict.HOLDS.value
    assert part(common, "floors")["verdict"] == Verdict.REFUTED.value
    assert common.verdict == Verdict.REFUTED
    # the per-ε binomial p-values agree with the Clopper–Pearson rule of the floors
    for r in (rare, common):
        d, e = part(r, "floors"), per_k(r)["floors"]
        for p_eps, upper in zip(d["p_by_epsilon"], e["reachable_probability_upper"]):
            assert (p_eps < 0.025) == (upper < 0.8)
        assert d["p_refute"] == pytest.approx(min(1, len(d["p_by_epsilon"])
                                                  * min(d["p_by_epsilon"])))
    assert part(common, "floors")["p_adjusted"] <= FAMILY_ALPHA


def test_floor_p_values_are_the_exact_binomial_test_bonferroni_over_epsilon():
    per, p = floor_p_values([0, 16, 30], 80, 0.8)
    assert per[0] == 1.0
    assert per[1] == pytest.approx(stats.binom.cdf(64, 80, 0.8))  # 64 of 80 reach ε
    assert p == pytest.approx(3 * per[2])
    # the threshold: the largest number of floors whose p stays ≥ 0.025, and one more
    ok = max(f for f in range(81) if stats.binom.cdf(80 - f, 80, 0.8) >= 0.025)
    assert floor_p_values([ok], 80, 0.8)[1] >= 0.025 > floor_p_values([ok + 1], 80, 0.8)[1]
    with pytest.raises(ValueError, match="floors"):
        floor_p_values([], 80, 0.8)


# ------------------------------------------------------------------ family-wise control

def _refuted(p):
    return {"verdict": Verdict.REFUTED.value, "p_refute": p}


def test_holm_keeps_a_refutation_only_below_its_adjusted_level():
    # two parts refuted at their own level: ×2 for the smaller, so 0.0124 stays, 0.0126 not
    for p, kept in ((0.0124, True), (0.0126, False)):
        parts, family = family_wise({"a": _refuted(p), "b": _refuted(p)}, ["a", "b"])
        want = Verdict.REFUTED.value if kept else Verdict.INCONCLUSIVE.value
        assert parts["a"]["verdict"] == parts["b"]["verdict"] == want
        assert parts["a"]["verdict_raw"] == Verdict.REFUTED.value
        assert parts["a"]["p_adjusted"] == pytest.approx(2 * p)
        assert family["members"]["a"]["p_raw"] == p and family["size"] == 2
    # alone, the same 0.0126 refutes: the family, not the part, moved it
    assert family_wise({"a": _refuted(0.0126)}, ["a"])[0]["a"]["verdict"] == "refuted"
    # a planned part not measured counts at p = 1 and keeps its place in the family
    for p, want in ((0.012, "refuted"), (0.013, "inconclusive")):
        parts, family = family_wise({"a": _refuted(p)}, ["a", "skipped"])
        assert parts["a"]["verdict"] == want and family["not_measured"] == ["skipped"]
        assert set(parts) == {"a"} and family["members"]["skipped"]["p_raw"] == 1.0
    # step-down, not Bonferroni: 0.02 · 1 after 0.011 · 2 and 0.005 · 3 all stay refuted
    parts, _ = family_wise({"a": _refuted(0.005), "b": _refuted(0.011), "c": _refuted(0.02)},
                           ["a", "b", "c"])
    assert all(v["verdict"] == "refuted" for v in parts.values())
    assert parts["c"]["p_adjusted"] == pytest.approx(0.022)
    # only refutations are adjusted; a part without a p-value counts at p = 1
    parts, family = family_wise({"h": {"verdict": "holds", "p_refute": 0.001},
                                 "o": {"verdict": "out of reach"}}, ["h", "o"])
    assert parts["h"]["verdict"] == "holds" and parts["o"]["p_refute"] == 1.0
    with pytest.raises(ValueError, match="planned family"):
        family_wise({"x": _refuted(0.01)}, ["a"])


class FixedSampleP(Theorem41LearnerCheck):
    """The check with every decided samples part's raw p-value set to ``p_samples`` (its
    interval and raw verdict untouched): moves the raw p across the Holm-adjusted level."""

    def __init__(self, params, p_samples, **kwargs):
        super().__init__(params, **kwargs)
        self.p_samples = p_samples

    def _measure_k(self, k, eps_grid, seed):
        entry = super()._measure_k(k, eps_grid, seed)
        if "samples" in entry:
            entry["samples"]["p_refute"] = self.p_samples
        return entry


def test_the_combined_verdict_is_family_wise_controlled():
    """Both families refute the thinned learner by their intervals; the family has 6 members
    (2 families × 3 parts). A raw p of 0.004 (Holm: ×6 = 0.024) refutes, and the second
    family is then not measured (its parts at p = 1); 0.0043 (×6 = 0.0258) — still under α
    alone — does not: both families are measured and the verdict is inconclusive."""
    params = replace(MEDIUM, targets=("ridge", "mlp"))
    keep = ThinnedSamples(REF, 1.5)
    low = FixedSampleP(params, 0.004, keep_rule=keep).decide(2)
    high = FixedSampleP(params, 0.0043, keep_rule=keep).decide(2)
    assert low.verdict == Verdict.REFUTED and high.verdict == Verdict.INCONCLUSIVE
    assert part(low, "samples")["verdict"] == "refuted"
    assert part(low, "samples")["p_adjusted"] == pytest.approx(0.024)
    assert low.details["skipped_cases"] == ["mlp,d=8"]
    assert len(low.details["family"]["not_measured"]) == 3
    for case in ("ridge,d=8", "mlp,d=8"):
        d = part(high, "samples", case=case)
        assert d["verdict_raw"] == "refuted" and d["verdict"] == "inconclusive"
        assert d["p_adjusted"] == pytest.approx(6 * 0.0043)
    assert high.details["family"]["size"] == 6 and not high.details["skipped_cases"]
    assert "inconclusive, unadjusted refuted" in high.measured_text


def test_calibration_beyond_its_cap_is_out_of_reach():
    params = replace(SMALL, calibration_cap=20_000)
    full = Theorem41LearnerCheck(params).decide(0)
    starved = Theorem41LearnerCheck(params, keep_rule=lambda k, e: 0.005).decide(0)
    assert per_k(full)["calibration"]["n_star"] < 20_000
    assert starved.verdict == Verdict.OUT_OF_REACH
    assert "would need" in per_k(starved)["reason"] or "needed" in per_k(starved)["reason"]


def test_fixed_width_is_refuted_by_its_floor():
    r = Theorem41LearnerCheck(SMALL, width_rule=FixedWidth(0.75, 1.0, REF)).decide(0)
    assert r.verdict == Verdict.REFUTED
    assert part(r, "floors")["verdict"] == Verdict.REFUTED.value


# ------------------------------------------------------------------ the quick preset

def test_svis_and_plants_per_part():
    check = Theorem41LearnerCheck(LearnerParams())
    svis = {v.part: v.size for v in check.smallest_violations()}
    assert svis == {"samples": SAMPLES_SVI, "table_size": TABLE_SVI, "floors": FLOORS_SVI}
    planted = check.planted_violations()
    for name, svi in svis.items():
        mine = [p for p in planted if p.part == name]
        sizes = sorted(p.size for p in mine)
        assert len(sizes) >= 3 and sizes[0] < svi < sizes[-1]  # a curve around the SVI
        (gate,) = [p for p in mine if p.size == svi]
        assert gate.runs is None  # n_power runs at the SVI; curve points 2 runs
        assert all(p.runs == 2 for p in mine if p is not gate)


@pytest.mark.parametrize("name", ["table_size", "floors"])
def test_each_decisive_part_is_refuted_on_its_svi_plant(name):
    # the quick grid and draws on the ridge family alone (about 1 s a planted decision)
    check = Theorem41LearnerCheck(replace(LearnerParams(), probes=(), targets=("ridge",)))
    (gate,) = [p for p in check.planted_violations()
               if p.part == name and p.runs is None]
    built = gate.build()
    for seed in (3, 4):
        assert built.part_verdict(built.decide(seed), name) == Verdict.REFUTED, (name, seed)


def test_the_sample_part_at_its_svi_after_holm():
    """The samples plant at the SVI on the quick grid, ridge family alone (a family of 3
    parts): every seed's interval refutes it, and after Holm 5 of seeds 1–6 still do — seed
    3's raw p of 0.009 becomes 0.027 > 0.025 (inconclusive). Family-wise control costs this
    part power; at quick (2 families, 6 parts) the check reports it."""
    check = Theorem41LearnerCheck(replace(LearnerParams(), probes=(), targets=("ridge",)))
    (gate,) = [p for p in check.planted_violations()
               if p.part == "samples" and p.runs is None]
    built = gate.build()
    parts = [part(built.decide(seed), "samples") for seed in range(1, 7)]
    assert all(d["verdict_raw"] == Verdict.REFUTED.value for d in parts)
    assert sum(d["verdict"] == Verdict.REFUTED.value for d in parts) >= 5
    assert all(d["verdict"] != Verdict.HOLDS.value for d in parts)
    for d in parts:
        assert (d["verdict"] == Verdict.REFUTED.value) == (d["p_adjusted"] <= FAMILY_ALPHA)


def test_tiny_run_is_underpowered_and_says_what_quick_decides():
    r = Theorem41LearnerCheck.preset("tiny").run(0)
    assert r.verdict == Verdict.UNDERPOWERED
    assert {v["part"] for v in r.svi} == {"samples", "table_size", "floors"}
    assert set(r.mdv) == {"samples", "table_size", "floors"}
    assert {case for case in r.details["cases"]} == {"ridge,d=8", "mlp,d=8"}
    assert "k = 2 only probed" in r.details["what_quick_decides"]
    assert "quick:" in r.measured_text and "one-sided" in r.details["one_sided"]


def test_both_target_families_are_decided_and_the_mlp_is_lipschitz_and_nonlinear():
    r = Theorem41LearnerCheck(replace(SMALL, targets=("ridge", "mlp"))).decide(0)
    assert {"samples ridge,d=8,k=1", "samples mlp,d=8,k=1"} <= set(r.details["parts"])
    assert part(r, "samples", case="mlp,d=8")["verdict"] == Verdict.HOLDS.value
    slack = r.details["target_lipschitz_slack"]
    assert slack["ridge,d=8,k=1"] == pytest.approx(1.0, abs=1e-6)
    assert 1.0 - 1e-6 <= slack["mlp,d=8,k=1"] < 2.0  # a certificate close to its slope
    subspace = UniformSubspace(8, 2, seed=1)
    for seed in range(5):
        f = make_target("mlp", subspace.basis, 1.0, seed)
        X = subspace.sample(500, seed=seed)
        i, j = np.triu_indices(100, 1)
        quotient = np.abs(f(X[i]) - f(X[j])) / np.linalg.norm(X[i] - X[j], axis=1)
        assert quotient.max() <= 1.0 + 1e-9  # L-Lipschitz in the ambient distance
    # non-linear: along a segment of Γ the values leave every straight line by > 1e-3
    f = make_target("mlp", subspace.basis, 1.0, 3)
    t = np.linspace(-0.5, 0.5, 201)
    y = f(np.outer(t, subspace.basis[:, 0]))
    residual = y - np.polyval(np.polyfit(t, y, 1), t)
    assert np.abs(residual).max() > 1e-3
    with pytest.raises(ValueError, match="target family"):
        make_target("cubic", subspace.basis, 1.0, 0)
    with pytest.raises(ValueError, match="orthonormal"):
        TangentMLP(2 * subspace.basis, 1.0, 0)


def test_coarse_share_hasher():
    widths = [CoarseShare(0.5)(8, 4, 0.1, s).width for s in range(200)]
    coarse = np.mean(np.isclose(widths, 4.0))
    assert 0.4 < coarse < 0.6 and set(np.round(widths, 6)) == {0.1, 4.0}
    assert all(w == 0.1 for w in (CoarseShare(0.0)(8, 4, 0.1, s).width for s in range(20)))


def test_determinism_and_probes():
    params = replace(SMALL, probes=((2, 0.7071),))
    a, b = Theorem41LearnerCheck(params).decide(5), Theorem41LearnerCheck(params).decide(5)
    assert a.to_dict() == b.to_dict()
    probe = a.details["cases"]["ridge,d=8"]["probes"]["2"]["calibration"]
    assert probe["constant"] > 10 and "probe, not decided" in a.measured_text


def test_parameter_errors():
    with pytest.raises(ValueError, match="strictly decreasing"):
        Theorem41LearnerCheck(replace(SMALL, epsilons=((1, (0.25, 0.5)),))).decide(0)
    with pytest.raises(ValueError, match="k"):
        Theorem41LearnerCheck(replace(SMALL, epsilons=((9, (0.5, 0.25)),))).decide(0)
    with pytest.raises(ValueError, match="epsilon"):
        Theorem41LearnerCheck(replace(SMALL, epsilons=((1, (10.0, 0.5)),))).decide(0)
    with pytest.raises(ValueError, match="at least 2"):
        Theorem41LearnerCheck(replace(SMALL, epsilons=((1, (0.5,)),))).decide(0)
    with pytest.raises(ValueError, match="cap_factor"):
        Theorem41LearnerCheck(replace(SMALL, cap_factor=0.5)).decide(0)
    with pytest.raises(ValueError, match="params"):
        Theorem41LearnerCheck(params=object())
    with pytest.raises(ValueError, match="targets"):
        Theorem41LearnerCheck(replace(SMALL, targets=("ridge", "ridge"))).decide(0)
    with pytest.raises(ValueError, match="targets"):
        Theorem41LearnerCheck(replace(SMALL, targets=())).decide(0)
    with pytest.raises(ValueError, match="direction"):
        RidgeTarget(np.zeros(3))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-5, 300), min_size=1, max_size=40),
       st.lists(st.integers(-2**40, 2**40) | st.integers(-3, 320), max_size=60),
       st.booleans())
def test_bucket_slots_are_the_query_buckets(query, keys, spread):
    """``BucketMeans.slots`` (a lookup table for small non-negative keys, a binary search
    otherwise) against a dict of the query buckets: the index of a key's bucket among the
    sorted distinct query keys, −1 for any other key."""
    query = np.array(query, np.int64) * (10**9 if spread else 1)  # spread: no table
    means = BucketMeans(query)
    index = {k: i for i, k in enumerate(np.unique(query))}
    keys = np.array(keys, np.int64)
    expected = np.array([index.get(k, -1) for k in keys.tolist()], np.int64)
    assert np.array_equal(means.slots(keys), expected)
    assert (means._table is not None) == (query.min() >= 0 and not (spread and query.max()))
