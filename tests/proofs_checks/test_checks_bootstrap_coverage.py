"""Coverage of the bootstrap intervals the checks decide with, measured on synthetic data
sets with a known exponent: each interval's two-sided 95 % percentile interval must cover the
true exponent in at least 90 % of 200 data sets.

For each decision interval the synthetic data imitate the check's: D draws per setting at a
geometric grid of settings x, each draw y = x^a · E with E i.i.d. from a continuous law
(lognormal), so that every quantile of y scales exactly as x^a; draws that the check reads
off a geometric grid (first-passage sample counts, widths) are rounded up to that grid. The
statistic is the check's (``OrderStatistic`` / ``InterpolatedQuantile`` at its quantile, raised
to its power; the mean for the Eq. (1) lookup's Box–Cox exponent).
"""

import math
import zlib

import numpy as np
import pytest

from proofs_checks._scaling import InterpolatedQuantile, OrderStatistic, bootstrap_exponent
from proofs_checks.eq1_flops import lookup_exponent

DATA_SETS = 200


def _draws(rng, x, exponent, n_draws, sigma, grid_ratio=None):
    out = []
    for xs in x:
        y = xs ** exponent * rng.lognormal(0.0, sigma, n_draws)
        if grid_ratio is not None:  # the first grid value ≥ y, as a first-passage count
            y = grid_ratio ** np.ceil(np.log(y) / math.log(grid_ratio))
        out.append(y)
    return out


# (name, statistic, draws per setting, settings, exponent of the draws, grid ratio): the
# statistics and sizes of the checks' decisions at their quick presets; the statistic's own
# exponent is the draws' times the statistic's power
CASES = [
    ("lemma42_diameter: 0.9-quantile of 50", InterpolatedQuantile(0.9), 50, 5, 1.0, None),
    ("lemma42_table_size: 0.9-quantile of 40, ^(1/2)", InterpolatedQuantile(0.9, 0.5), 40, 3,
     2.0, None),
    ("theorem41/B1: 0.8 order statistic of 60 on a 2^(1/8) grid", OrderStatistic(0.8), 60, 4,
     1.0, 2 ** 0.125),
    ("theorem43: 0.75 order statistic of 24 on a 2^(1/4) grid", OrderStatistic(0.75), 24, 3,
     2.0, 2 ** 0.25),
]


@pytest.mark.parametrize("name, stat, n_draws, n_settings, exponent, grid", CASES,
                         ids=[c[0].split(":")[0] for c in CASES])
def test_percentile_interval_of_the_exponent_covers(name, stat, n_draws, n_settings, exponent,
                                                    grid):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = 2.0 ** np.arange(n_settings)
    covered = 0
    for i in range(DATA_SETS):
        est = bootstrap_exponent(x, _draws(rng, x, exponent, n_draws, 0.5, grid), stat,
                                 n_boot=200, seed=i)
        covered += est.ci_low <= exponent * stat.power <= est.ci_high
    assert covered / DATA_SETS >= 0.9, f"{name}: coverage {covered / DATA_SETS:.3f}"


@pytest.mark.slow
@pytest.mark.parametrize("beta", [0.0, 0.25])
def test_lookup_exponent_interval_covers(beta):
    # per-query lookup costs around a + b·(N^β − 1)/β with a noise of a few comparisons, as
    # the Eq. (1) check measures them (32 queries per setting, N over 2–3 decades)
    rng = np.random.default_rng(int(beta * 100))
    N = np.round(np.geomspace(5, 20000, 20))
    g = np.log(N) if beta == 0 else np.expm1(beta * np.log(N)) / beta
    covered = 0
    for i in range(DATA_SETS):
        reps = [2 + 1.5 * gi + rng.uniform(-2, 2, 32) for gi in g]
        est = lookup_exponent(N, reps, n_boot=200, seed=i)
        covered += est["ci"][0] <= beta <= est["ci"][1]
    assert covered / DATA_SETS >= 0.9, f"β = {beta}: coverage {covered / DATA_SETS:.3f}"


# ---------------------------------------------------------------- Theorem 4.3's coverage count
# The samples part of the Theorem 4.3 check decides on the exponent of the 0.75 order
# statistic of 48 coverage counts n_cov per validation ε (the first n at which a uniform
# stream of Γ has hit every bump ball), divided by the offset k·ln(2x/C), x = √d L/ε: it
# *holds* on the lower end of the 95 % interval and is *refuted* on the upper end of the
# Bonferroni interval at 1 − 0.05/m (m = 4 decisive parts at the quick preset). Both ends are
# used one-sidedly, so each is tested at its own one-sided level, besides the two-sided
# coverage of the 95 % interval.
#
# Synthetic data with a known truth: the bump balls of the real packing family on the real Γ
# (masses p_j measured once on 100 000 uniform points of Γ; boundary balls are lighter), and
# n_cov drawn exactly from them by Poissonisation: with a rate-1 Poisson stream, ball j is
# first hit at T_j ~ Exp(p_j), independently; the stream covers at T = max_j T_j, after
# M + Poisson(Σ_j p_j (T − T_j) + (1 − Σ_j p_j) T) samples (each ball once, the later hits of
# the others and the misses before T). The truth is the slope the interval estimates: that of
# log q_0.75(n_cov) − log offset on log x, with the population quantiles from 200 000 draws.
# It is not k: the family's M grows slower than x^k at these x (1.78 at k = 2).

_T43_DIM, _T43_DRAWS, _T43_QUANTILE, _T43_DECISIVE_PARTS = 8, 48, 0.75, 4
# (k, calibration constant C (about what the quick run calibrates), validation ε: quick grid)
_T43_GRIDS = [(1, 1.6, (0.125, 0.0625, 0.03125)), (2, 2.3, (0.5, 0.35, 0.25, 0.177, 0.125))]


def _ball_masses(k, epsilon, n=100_000):
    from scipy.spatial import cKDTree

    from lipschitz import UniformSubspace
    from proofs_checks._framework import child_seeds
    from proofs_checks.packing import PackingFamily

    sub = UniformSubspace(_T43_DIM, k, seed=child_seeds(0, 1, 1, k)[0])
    family = PackingFamily(sub.basis, epsilon, 1.0)
    S = sub.sample(n, seed=1)
    dist, idx = cKDTree(np.asarray(family.centers)).query(S)
    inside = dist < float(family.radius)
    return np.bincount(idx[inside], minlength=int(family.n_centers)) / n, family, sub


def _coverage_counts(rng, p, size):
    """n_cov of ``size`` independent streams hitting disjoint balls of masses p (exact)."""
    T = rng.exponential(1.0 / p, (size, len(p)))  # (size, M) first hits, Poisson time
    t = T.max(axis=1)
    lam = (p * (t[:, None] - T)).sum(axis=1) + (1.0 - p.sum()) * t
    return (len(p) + rng.poisson(lam)).astype(np.float64)


def test_poissonised_coverage_count_is_the_checks_coverage_count():
    # the sampler against the check's own ``_coverage`` on real uniform streams of Γ
    from scipy import stats

    from proofs_checks.theorem43_dense_lower_bound import _coverage

    p, family, sub = _ball_masses(1, 0.125)
    centers, M = np.asarray(family.centers), int(family.n_centers)
    member = family.member(np.ones(M))
    n_max = math.ceil(16 * M * math.log(math.e * M))
    real = [_coverage(sub.sample(n_max, seed=100 + i), centers, float(family.radius), member,
                      family, 0.125)[0] for i in range(300)]
    simulated = _coverage_counts(np.random.default_rng(3), p, 3000)
    assert stats.ks_2samp(real, simulated).pvalue > 0.05
    assert np.quantile(real, 0.75) == pytest.approx(np.quantile(simulated, 0.75), rel=0.1)


@pytest.mark.slow
@pytest.mark.parametrize("k, C, epsilons", _T43_GRIDS, ids=[f"k={g[0]}" for g in _T43_GRIDS])
def test_theorem43_coverage_count_intervals_cover(k, C, epsilons):
    from proofs_checks._scaling import fit_exponent

    rng = np.random.default_rng(43 + k)
    masses = [_ball_masses(k, e)[0] for e in epsilons]
    x = np.array([math.sqrt(_T43_DIM) / e for e in epsilons])
    offset = k * np.log(2 * x / C)
    stat = OrderStatistic(_T43_QUANTILE)
    population = [np.quantile(_coverage_counts(rng, p, 200_000), _T43_QUANTILE,
                              method="inverted_cdf") for p in masses]
    truth = fit_exponent(x, population, offset)
    family_confidence = 1 - 0.05 / _T43_DECISIVE_PARTS
    two_sided = low_side = high_side_family = wrong = 0
    for i in range(DATA_SETS):
        draws = [_coverage_counts(rng, p, _T43_DRAWS) for p in masses]
        est = bootstrap_exponent(x, draws, stat, n_boot=400, seed=i, offset=offset)
        wide = bootstrap_exponent(x, draws, stat, n_boot=400, seed=i, offset=offset,
                                  confidence=family_confidence)
        two_sided += est.ci_low <= truth <= est.ci_high
        low_side += est.ci_low <= truth  # one-sided: the end that decides *holds*
        high_side_family += truth <= wide.ci_high  # one-sided: the end that decides *refuted*
        wrong += est.ci_low <= truth + 0.25 <= est.ci_high
    rates = {"two-sided 95 %": two_sided / DATA_SETS,
             "one-sided lower end (nominal 0.975)": low_side / DATA_SETS,
             "one-sided upper end of the family interval (nominal "
             f"{1 - (1 - family_confidence) / 2:.4f})": high_side_family / DATA_SETS}
    assert rates["two-sided 95 %"] >= 0.9, rates
    assert low_side / DATA_SETS >= 0.95, rates
    assert high_side_family / DATA_SETS >= 0.975, rates
    # the test has teeth: a truth off by 0.25 is covered far less often
    assert wrong / DATA_SETS < 0.5, (wrong / DATA_SETS, rates)
