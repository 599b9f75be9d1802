"""inference.paired, inference.equivalence and inference.effect_size against scipy and
statsmodels reference values, and their errors."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from inference import (beyond_band_p, cluster_means, minimal_detectable_effect, paired_t_test,
                       paired_test, seeds_needed, sign_flip_test, tost_paired)


@pytest.mark.parametrize("alternative", ["two-sided", "less", "greater"])
def test_sign_flip_equals_scipys_exact_permutation_test(alternative):
    d = np.array([-0.31, -0.12, 0.05, -0.22, -0.4, 0.02, -0.18])
    ours = sign_flip_test(d, alternative=alternative)
    ref = stats.permutation_test((d,), np.mean, permutation_type="samples",
                                 alternative=alternative, n_resamples=np.inf)
    assert ours.exact and ours.n_units == 7
    assert ours.p_value == pytest.approx(ref.pvalue)
    assert ours.statistic == pytest.approx(d.mean())


def test_sign_flip_flips_whole_clusters_and_weighs_strata_equally():
    # 3 seeds × 2 sizes: flipping seeds gives 2**3 sign vectors, so p >= 2/8 two-sided
    d = np.array([-0.5, -0.4, -0.45, -0.1, -0.12, -0.11])
    strata = [8, 8, 8, 16, 16, 16]
    clusters = [0, 1, 2, 0, 1, 2]
    by_seed = sign_flip_test(d, strata, clusters)
    assert by_seed.n_units == 3 and by_seed.p_value == pytest.approx(0.25)
    assert by_seed.min_p_value == pytest.approx(0.25)
    assert sign_flip_test(d, strata).p_value == pytest.approx(2 / 64)  # cells alone
    # an unbalanced stratum: the statistic is the mean of the stratum means
    unbalanced = sign_flip_test([1.0, 1.0, 1.0, 4.0], [0, 0, 0, 1])
    assert unbalanced.statistic == pytest.approx((1.0 + 4.0) / 2)
    # the seed's per-stratum mean is what flips: equal to the test on cluster means
    means = cluster_means(d, strata, clusters)
    ref = stats.permutation_test((means,), np.mean, permutation_type="samples",
                                 n_resamples=np.inf)
    assert by_seed.p_value == pytest.approx(ref.pvalue)


def test_sign_flip_monte_carlo_p_value_is_never_zero():
    d = np.full(30, -1.0) + np.linspace(0, 0.01, 30)
    result = sign_flip_test(d, n_resamples=999, seed=3)
    assert not result.exact and result.p_value == pytest.approx(1 / 1000)
    assert result == sign_flip_test(d, n_resamples=999, seed=3)  # seeded


def test_paired_t_test_is_scipys_t_test_on_cluster_means():
    rng = np.random.default_rng(0)
    d = rng.normal(-0.1, 0.05, 12)
    strata, clusters = np.tile([8, 16, 32], 4), np.repeat([0, 1, 2, 3], 3)
    result = paired_t_test(d, strata, clusters)
    means = d.reshape(4, 3).mean(axis=1)
    ref = stats.ttest_1samp(means, 0.0)
    ci = ref.confidence_interval(0.95)
    assert result.p_value == pytest.approx(ref.pvalue) and result.n == 4
    assert (result.low, result.high) == pytest.approx((ci.low, ci.high))
    assert result.sd == pytest.approx(means.std(ddof=1))


def test_no_noise_gives_no_p_value_and_no_interval():
    for d, clusters in (([-0.2, -0.2, -0.2], [0, 1, 2]), ([-0.2, -0.3], [0, 0])):
        result = paired_t_test(d, clusters=clusters)
        assert np.isnan(result.p_value) and np.isnan(result.low)
        assert result.test.startswith("none")
    assert np.isnan(tost_paired([0.01, 0.01, 0.01], -0.1, 0.1).p_value)


def test_paired_test_falls_back_to_the_sign_flip_when_normality_fails():
    d = np.array([-0.1, -0.11, -0.09, -0.1, -0.105, -3.0])  # one wild seed: not normal
    t = paired_t_test(d)
    assert t.normality_p < 0.05
    chosen = paired_test(d)
    assert chosen.test == "sign-flip (exact)"
    assert chosen.p_value == pytest.approx(sign_flip_test(d).p_value)
    # the threshold: a normality level below the measured p keeps the t test
    kept = paired_test(d, normality_alpha=t.normality_p * 0.99)
    assert kept.test == "paired t on cluster means" and kept.p_value == pytest.approx(
        t.p_value)


def test_tost_is_two_one_sided_scipy_tests():
    d = np.array([0.02, -0.01, 0.03, 0.0, 0.015])
    result = tost_paired(d, -0.1, 0.1)
    low = stats.ttest_1samp(d, -0.1, alternative="greater").pvalue
    high = stats.ttest_1samp(d, 0.1, alternative="less").pvalue
    assert result.p_value == pytest.approx(max(low, high))
    assert (result.p_low, result.p_high) == pytest.approx((low, high))
    # the band moves the decision: equivalent within ±0.1, not within ±0.02
    assert result.p_value < 0.05 and tost_paired(d, -0.02, 0.02).p_value > 0.05
    # one infinite side: non-inferiority, the upper test alone
    one_sided = tost_paired(d - 0.5, -np.inf, 0.1)
    assert one_sided.p_low == 0.0 and one_sided.p_value == pytest.approx(
        stats.ttest_1samp(d - 0.5, 0.1, alternative="less").pvalue)
    far = np.array([0.5, 0.55, 0.6])
    assert beyond_band_p(far, -0.1, 0.1) < 0.05 and beyond_band_p(d, -0.1, 0.1) > 0.5


def test_mde_and_seeds_needed_are_statsmodels_power():
    d_star = TTestPower().solve_power(nobs=3, alpha=0.05, power=0.8)
    assert minimal_detectable_effect(0.05, 3) == pytest.approx(d_star * 0.05)
    n = seeds_needed(0.1, 0.05)
    power = lambda k: TTestPower().power(effect_size=2.0, nobs=k, alpha=0.05)  # noqa: E731
    assert power(n) >= 0.8 > power(n - 1)
    assert seeds_needed(0.1, 0.05, max_seeds=n - 1) is None


@pytest.mark.parametrize("call, match", [
    (lambda: sign_flip_test([]), "differences"),
    (lambda: sign_flip_test([1.0, np.nan]), "differences"),
    (lambda: sign_flip_test([1.0, 2.0], strata=[1]), "strata"),
    (lambda: sign_flip_test([1.0], alternative="up"), "alternative"),
    (lambda: sign_flip_test([1.0], n_resamples=0), "n_resamples"),
    (lambda: sign_flip_test([1.0], exact_limit=30), "exact_limit"),
    (lambda: cluster_means([1.0, 2.0, 3.0], [0, 1, 0], [0, 0, 1]), "lack a stratum"),
    (lambda: paired_test([1.0, 2.0], normality_alpha=1.5), "normality_alpha"),
    (lambda: tost_paired([1.0, 2.0], 0.1, -0.1), "low < high"),
    (lambda: minimal_detectable_effect(-1.0, 3), "sd"),
    (lambda: minimal_detectable_effect(1.0, 1), "n must be"),
    (lambda: seeds_needed(0.0, 1.0), "sesoi"),
])
def test_bad_input_names_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
