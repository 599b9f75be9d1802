"""The specification of the experiment claims' decision rules (experiments/analysis/claims/_rules.py),
by simulation with a known truth and by moving each quantity across its threshold.

Simulated claim rows: ln nMSE of two models at 4 sizes on the quick preset's 3 seeds. A seed
draws the data and the initialisation of every size, so the differences of one seed share a
component (sd ``TAU``) besides each cell's own noise (sd ``SIGMA``). The tiny preset's rows
(n_train 2 000, 2 seeds) show seed sds of 0.13–0.23 in ln nMSE differences; the quick preset has
10× the data, so 0.05–0.1 is the realistic range used here.
"""

import gc
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.claims import ALPHA, NO_NOISE, SESOI, Claim, Rule, adjust_family, best_of, compare, comparison_verdict, control_status, decided, equivalence_stats, equivalence_verdict, paired_difference
from experiments.papers.scaling_claims import claims_for
from experiments.analysis.claims._controls import _quarter_pairs
from inference import clopper_pearson, sign_flip_test

SIGMA, TAU = 0.05, 0.05
SIZES = (8, 16, 32, 64)
QUICK_SEEDS = 3
N_SIM = 1000
LN_SESOI = SESOI["ln_error"].value


@pytest.fixture(autouse=True)
def _fast_holm(monkeypatch):
    # statsmodels' multipletests(method="holm") runs gc.collect() on every call (~40 ms);
    # the simulations call it thousands of times. The adjustment itself is unchanged.
    monkeypatch.setattr(gc, "collect", lambda *args, **kwargs: 0)


def _tables(rng, effect, n_seeds=QUICK_SEEDS, sizes=SIZES, sigma=SIGMA, tau=TAU,
            per_size=None):
    """(better, worse) ln-error tables by size and seed: better − worse has mean ``effect``
    (or ``per_size[i]`` at size i), a seed component of sd ``tau`` and cell noise ``sigma``."""
    data = rng.normal(0, 0.2, n_seeds)  # the seed's data: shared by both models, cancels
    worse = -0.3 * np.log2(sizes)[:, None] + data + rng.normal(0, sigma, (len(sizes), n_seeds))
    shift = np.asarray(per_size if per_size is not None else [effect] * len(sizes))[:, None]
    better = (-0.3 * np.log2(sizes)[:, None] + data + shift + rng.normal(0, tau, n_seeds)
              + rng.normal(0, sigma, (len(sizes), n_seeds)))
    index = pd.Index(sizes, dtype=float)
    return pd.DataFrame(better, index=index), pd.DataFrame(worse, index=index)


def _verdict(better, worse, direction="lower", sesoi=LN_SESOI):
    stats = paired_difference(better, worse, [(x, x) for x in better.index])
    return comparison_verdict(stats, sesoi, direction), stats


def _rate(hits, n, what):
    low, high = clopper_pearson(hits, n)
    print(f"{what}: {hits}/{n} = {hits / n:.3f} [{low:.3f}, {high:.3f}] (95 % Clopper–Pearson)")
    return low, high


# -- size under a true tie --------------------------------------------------------------------

@pytest.mark.parametrize("sigma, tau", [(0.02, 0.01), (SIGMA, TAU)])
def test_a_true_tie_reads_supported_at_most_five_percent(sigma, tau):
    # (0.02, 0.01): noise small enough that the MDE passes the SESOI, so the test decides;
    # (SIGMA, TAU): the realistic noise, where the MDE gate mostly says underpowered
    rng = np.random.default_rng(46)
    supported = significant = 0
    for _ in range(N_SIM):
        verdict, stats = _verdict(*_tables(rng, 0.0, sigma=sigma, tau=tau))
        supported += verdict == "supported"
        significant += stats["p_value"] <= ALPHA
    _, high = _rate(supported, N_SIM, f"P(supported | tie, σ={sigma}, τ={tau})")
    low, _ = _rate(significant, N_SIM, f"P(p ≤ α | tie, σ={sigma}, τ={tau}), two-sided")
    assert high <= 0.05 and low <= ALPHA  # the test itself keeps its level


def test_flipping_cells_alone_would_be_anticonservative_so_seeds_flip_whole():
    # why the test flips whole seeds: with a seed component, flipping (size, seed) cells
    # alone rejects a true tie far more often than its level
    rng = np.random.default_rng(7)
    strata, clusters = np.repeat(np.arange(4), 3), np.tile(np.arange(3), 4)
    cells = seeds = 0
    for _ in range(N_SIM):
        d = rng.normal(0, 1, 3)[clusters] + rng.normal(0, 1, 12)
        cells += sign_flip_test(d, strata, alternative="less").p_value <= 0.05
        seeds += sign_flip_test(d, strata, clusters, alternative="less").p_value <= 0.05
    low, _ = _rate(cells, N_SIM, "sign-flip of cells, seed sd = cell sd, tie")
    assert low > 0.05 and seeds == 0  # 3 whole seeds: the smallest one-sided p is 1/8


def test_underperforms_and_mixed_keep_their_size_under_a_tie():
    rng = np.random.default_rng(11)
    higher = mixed = 0
    for _ in range(N_SIM):
        verdict, stats = _verdict(*_tables(rng, 0.0), direction="higher")
        higher += verdict == "supported"
        mixed += stats["mixed"]
    _rate(higher, N_SIM, "P(supported 'underperforms' | tie)")
    _, high = _rate(mixed, N_SIM, "P(mixed | tie, 4 sizes)")
    assert higher / N_SIM <= 0.05 and high <= 0.05


@pytest.mark.slow
def test_best_of_two_keeps_its_size_under_a_tie():
    rng = np.random.default_rng(12)
    hits = 0
    for _ in range(N_SIM):
        candidates = []
        for label in ("DSM 50%", "DSM 25%"):
            better, worse = _tables(rng, 0.0, sizes=(1024,))
            candidates.append((label, paired_difference(better, worse, [(1024.0, 1024.0)])))
        _, stats, _ = best_of(candidates, "comparison")
        hits += comparison_verdict(stats, LN_SESOI) == "supported"
    _, high = _rate(hits, N_SIM, "P(supported | best of 2, tie)")
    assert high <= 0.05


@pytest.mark.slow
def test_equivalence_at_the_band_edge_reads_supported_at_most_five_percent():
    # 10 seeds, so that TOST can succeed. On the band's edge its size is α exactly (the
    # rate must not be significantly above it); just beyond the edge it is below α.
    rng = np.random.default_rng(13)
    band = float(np.log(1.5))
    for truth, what in ((band, "on the band edge"), (1.2 * band, "at 1.2 × the edge")):
        hits = 0
        for _ in range(N_SIM):
            stats = paired_difference(*_tables(rng, truth, n_seeds=10),
                                      [(x, x) for x in SIZES])
            hits += equivalence_verdict(equivalence_stats(stats, band), band) == "supported"
        low, high = _rate(hits, N_SIM, f"P(supported equivalence | truth {what})")
        assert (low if truth == band else high) <= ALPHA


def test_discrete_accuracies_tie_reads_supported_at_most_five_percent():
    # test errors are counts over n_test images: differences are multiples of 1/n_test
    rng = np.random.default_rng(14)
    n_test, hits = 200, 0
    for _ in range(N_SIM):
        a = pd.DataFrame(rng.binomial(n_test, 0.1, (4, 3)) / n_test, index=SIZES)
        b = pd.DataFrame(rng.binomial(n_test, 0.1, (4, 3)) / n_test, index=SIZES)
        hits += _verdict(a, b, sesoi=SESOI["test_error"].value)[0] == "supported"
    _, high = _rate(hits, N_SIM, "P(supported | tie, accuracies on 200 images)")
    assert high <= 0.05


# -- power ------------------------------------------------------------------------------------

def test_power_at_the_sesoi_is_reported_and_reached_with_more_seeds():
    rng = np.random.default_rng(15)
    n = 300
    quick = sum(_verdict(*_tables(rng, -LN_SESOI))[0] == "supported" for _ in range(n))
    _rate(quick, n, f"power at the SESOI with the quick preset's {QUICK_SEEDS} seeds")
    # the seeds the rule prints as deciding: where the expected MDE reaches the SESOI (sd of
    # a seed's mean difference over 4 sizes: √(τ² + 2σ²/4)); the measured MDE then passes
    # about half the time, so twice as many give the power
    from inference import seeds_needed

    needed = seeds_needed(LN_SESOI, float(np.sqrt(TAU ** 2 + 2 * SIGMA ** 2 / 4)))
    at_needed = sum(_verdict(*_tables(rng, -LN_SESOI, n_seeds=needed))[0] == "supported"
                    for _ in range(n))
    _rate(at_needed, n, f"power at the SESOI with the {needed} seeds printed as deciding")
    more = sum(_verdict(*_tables(rng, -LN_SESOI, n_seeds=2 * needed))[0] == "supported"
               for _ in range(n))
    low, _ = _rate(more, n, f"power at the SESOI with {2 * needed} seeds")
    assert needed > QUICK_SEEDS and low >= 0.8 and quick < at_needed < more


# -- cases without noise ----------------------------------------------------------------------

def _rows(values, seeds):
    rows = []
    for seed in seeds:
        for x in SIZES:
            for label, value in values(x, seed).items():
                rows.append({"experiment": "e", "target": "t", "model": label.split()[0].lower(),
                             "model_label": label, "activated_units": x, "width": x,
                             "buckets": np.nan, "flops_paper": 18 * x,
                             "eval_nmse": value, "eval_mse": value, "seed": seed,
                             "fit": "exact", "train_nmse": value / 2})
    return pd.DataFrame(rows)


def test_zero_variance_and_a_single_seed_never_read_supported():
    identical = _rows(lambda x, s: {"dense": 1.0 / x, "DSM width 64": 0.5 / x}, (0, 1, 2))
    single = _rows(lambda x, s: {"dense": 1.0 / x, "DSM width 64": 0.5 / x}, (0,))
    for frame in (identical, single):
        claim = compare("fig2", "DSM beats dense", frame, "DSM width 64", "dense",
                        "activated_units")
        assert claim.verdict == NO_NOISE and np.isnan(claim.p_value)
        assert NO_NOISE in claim.significance
    # the same halving with noise measured: supported
    rng = np.random.default_rng(0)
    noisy = _rows(lambda x, s: {"dense": 1.0 / x,
                                "DSM width 64": 0.5 / x * np.exp(rng.normal(0, 0.02))}, (0, 1, 2))
    assert compare("fig2", "t", noisy, "DSM width 64", "dense",
                   "activated_units").verdict == "supported"


# -- each threshold moved across its edge -----------------------------------------------------

def _stats(mean=-0.3, p=0.01, mde=0.05, mixed=False, sd=0.1, n=3):
    return {"mean": mean, "p_value": p, "sd": sd, "n_seeds": n, "mde": mde, "mixed": mixed,
            "low": mean - 0.1, "high": mean + 0.1, "test": "paired t on cluster means",
            "per_x": pd.DataFrame(), "seed_values": np.array([mean] * n)}


def test_comparison_thresholds():
    s = LN_SESOI
    assert comparison_verdict(_stats(p=0.049), s) == "supported"
    assert comparison_verdict(_stats(p=0.051), s) == "inconclusive"
    assert comparison_verdict(_stats(p=0.01), s, p_adjusted=0.051) == "inconclusive"
    assert comparison_verdict(_stats(mde=0.99 * s), s) == "supported"
    assert comparison_verdict(_stats(mde=1.01 * s), s) == "underpowered"
    assert comparison_verdict(_stats(p=0.2, mde=1.01 * s), s) == "underpowered"
    assert comparison_verdict(_stats(mean=0.3), s) == "not supported"
    assert comparison_verdict(_stats(mean=0.3), s, "higher") == "supported"
    assert comparison_verdict(_stats(mixed=True), s) == "mixed"
    assert comparison_verdict(_stats(sd=0.0), s) == NO_NOISE
    assert comparison_verdict(_stats(n=1), s) == NO_NOISE
    with pytest.raises(ValueError, match="direction"):
        comparison_verdict(_stats(), s, "up")
    with pytest.raises(ValueError, match="p_adjusted"):
        comparison_verdict(_stats(), s, p_adjusted=1.5)


def test_equivalence_thresholds():
    base = dict(_stats(mean=0.01), p_tost=0.01, p_beyond=0.9)
    assert equivalence_verdict(dict(base, p_tost=0.049), 0.1) == "supported"
    assert equivalence_verdict(dict(base, p_tost=0.051), 0.1) == "inconclusive"
    assert equivalence_verdict(dict(base, p_tost=0.5, p_beyond=0.049), 0.1) == "not supported"
    assert equivalence_verdict(dict(base, p_tost=0.5, p_beyond=0.051), 0.1) == "inconclusive"
    assert equivalence_verdict(dict(base, mde=0.11), 0.1) == "underpowered"


def _claim(p):
    rule = Rule("comparison", "lower", _stats(p=p), SESOI["ln_error"])
    return decided(Claim("e", "A beats B", "", ""), rule)


def test_holm_over_the_experiment_changes_a_decision():
    alone = _claim(0.03)
    assert alone.verdict == "supported" and alone.p_adjusted == pytest.approx(0.03)
    family = adjust_family([_claim(0.03), _claim(0.03)])
    assert [c.p_adjusted for c in family] == pytest.approx([0.06, 0.06])
    assert [c.verdict for c in family] == ["inconclusive", "inconclusive"]
    assert "Holm-adjusted over 2 claims: 0.06" in family[0].significance
    # controls stay outside the family
    control = replace(_claim(0.03), role="negative control")
    adjusted = adjust_family([_claim(0.03), control])
    assert adjusted[0].p_adjusted == pytest.approx(0.03) and adjusted[0].verdict == "supported"


def test_best_of_is_adjusted_for_every_configuration_tested():
    two = best_of([("a", _stats(p=0.03)), ("b", _stats(p=0.5))], "comparison")
    assert two[0] == "a" and two[1]["p_value"] == pytest.approx(0.06)
    one = best_of([("a", _stats(p=0.03))], "comparison")
    assert one[1]["p_value"] == pytest.approx(0.03)
    # none leans the claimed way: refuted only if every one is (the largest p decides)
    worse = best_of([("a", _stats(mean=0.3, p=0.01)), ("b", _stats(mean=0.2, p=0.2))],
                    "comparison")
    assert worse[0] == "b" and comparison_verdict(worse[1], LN_SESOI) == "inconclusive"


def test_mixed_needs_sizes_that_disagree_significantly():
    rng = np.random.default_rng(3)
    better, worse = _tables(rng, 0.0, sizes=(8, 64), per_size=[-0.5, 0.5], tau=0.0,
                            sigma=0.02)
    verdict, stats = _verdict(better, worse)
    assert verdict == "mixed" and stats["per_x"]["significant"].all()
    better, worse = _tables(rng, 0.0, sizes=(8, 64), per_size=[-0.5, 0.0], tau=0.0,
                            sigma=0.02)
    assert not _verdict(better, worse)[1]["mixed"]


def test_a_test_that_cannot_reach_alpha_is_underpowered():
    # a wild seed fails the normality check: the sign-flip over 3 seeds has p >= 1/4
    better = pd.DataFrame([[-0.5, -0.52, -3.0], [-0.5, -0.49, -3.1]], index=[8.0, 16.0])
    worse = pd.DataFrame(np.zeros((2, 3)), index=[8.0, 16.0])
    verdict, stats = _verdict(better, worse)
    assert stats["test"] == "sign-flip (exact)" and stats["mde"] == np.inf
    assert verdict == "underpowered"


# -- controls ---------------------------------------------------------------------------------

def test_positive_control_pairs_sizes_a_factor_four_apart():
    assert _quarter_pairs([8, 16, 32, 64]) == [(32.0, 8.0), (64.0, 16.0)]
    assert _quarter_pairs([8, 16, 31]) == []
    assert _quarter_pairs(["task 1", "task 2"]) == []


def test_controls_read_as_they_must_and_a_failed_one_marks_the_experiment():
    rng = np.random.default_rng(5)
    noise = {}

    def values(x, seed):
        dense = np.exp(-0.5 * np.log2(x) + noise.setdefault(("s", seed), rng.normal(0, 0.1))
                       + rng.normal(0, 0.03))
        return {"dense": dense, "DSM width 64": dense * np.exp(rng.normal(-0.3, 0.03))}

    claims = claims_for("fig2", _rows(values, range(6)), [])
    roles = {c.role: c for c in claims}
    assert roles["negative control"].verdict != "supported"
    assert "seeds [0, 1, 2]" in roles["negative control"].claim
    assert roles["positive control"].verdict == "supported"
    assert control_status("negative control", "supported") == "FAILED"
    # a negative control that could not have read supported checks nothing
    assert control_status("negative control", NO_NOISE) == "COULD NOT FAIL"
    assert control_status("negative control", "underpowered") == "COULD NOT FAIL"
    assert control_status("negative control", "inconclusive") == "passed"
    assert control_status("negative control", "not supported") == "passed"
    assert control_status("positive control", "underpowered") == "FAILED"
    from experiments.pipeline.report import claims_overview

    table = pd.DataFrame([{k: getattr(c, k) for k in ("experiment", "verdict", "role",
                                                      "p_value")} for c in claims])
    table.loc[table["role"] == "negative control", "verdict"] = "inconclusive"
    assert "UNRELIABLE" not in "\n".join(claims_overview(table))
    table.loc[table["role"] == "positive control", "verdict"] = "inconclusive"
    text = "\n".join(claims_overview(table))
    assert "UNRELIABLE (a control failed)" in text and "Unreliable (a control failed" in text
    table.loc[table["role"] == "positive control", "verdict"] = "supported"
    table.loc[table["role"] == "negative control", "verdict"] = "underpowered"
    text = "\n".join(claims_overview(table))
    assert "UNRELIABLE (a control could not fail)" in text
    assert "fig2 (a control could not fail)" in text


def test_every_claim_row_carries_the_decision_columns():
    rng = np.random.default_rng(6)
    frame = _rows(lambda x, s: {"dense": np.exp(rng.normal(-np.log2(x), 0.05)),
                                "DSM width 64": np.exp(rng.normal(-np.log2(x) - 0.2, 0.05))},
                  range(3))
    from experiments.analysis.claims import CLAIM_COLUMNS

    table = pd.DataFrame([{k: getattr(c, k) for k in CLAIM_COLUMNS}
                          for c in claims_for("fig2", frame, [])])
    assert {"sesoi", "mde", "p_value", "p_adjusted", "test"} <= set(table.columns)
    tested = table[table["role"] == "claim"]
    assert tested["sesoi"].notna().all() and (tested["test"] != "").all()
    assert (tested["p_adjusted"] >= tested["p_value"]).all()
    assert ALPHA == 0.05


@pytest.mark.parametrize("alpha, n", [(0.05, 6), (0.0625, 5), (0.01, 8)])
def test_sign_flip_seeds_is_where_the_exact_sign_flip_first_reaches_alpha(alpha, n):
    """Checked against the exact sign-flip test itself: every seed's difference negative is
    its smallest p; at n − 1 seeds it is above alpha, at n at or below."""
    from experiments.analysis.claims import sign_flip_seeds

    assert sign_flip_seeds(alpha) == n
    for seeds, reaches in ((n - 1, False), (n, True)):
        p = sign_flip_test(-np.arange(1.0, seeds + 1)).p_value
        assert (p <= alpha) is reaches


def test_an_underpowered_sign_flip_says_how_many_seeds_it_needs():
    """Five seeds of a large, clean effect whose normality check fails go to the exact
    sign-flip, which cannot reach p ≤ 0.05 (2/32): the text asks for 6 seeds, not fewer."""
    from experiments.analysis.claims import sign_flip_seeds

    stats = {"mean": -0.32, "p_value": 0.0625, "sd": 0.01, "n_seeds": 5, "mde": np.inf,
             "test": "sign-flip (exact)", "mixed": False, "low": -0.33, "high": -0.31}
    text = Rule("comparison", "lower", stats, SESOI["ln_error"]).text(0.0625, 0)
    assert f"{sign_flip_seeds()} seeds would detect" in text

