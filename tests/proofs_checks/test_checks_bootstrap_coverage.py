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
