"""The controls at the quick preset's control seeds (``experiments.papers.presets.CONTROL_PLAN``),
simulated at the seed noise measured there (``CONTROL_NOISE``): the negative control's size
on a true tie, its power against a planted difference, and the positive control's power at
the measured effect — each through ``control_claims``, the code the report runs."""

import functools

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.claims import SESOI, control_claims, control_status
from experiments.papers.catalogue import experiment_configs
from experiments.papers.presets import CONTROL_NOISE, CONTROL_PLAN
from inference import clopper_pearson

LN = SESOI["ln_error"]
REFERENCE = {"routers": "dense MLP, trained"}


def _design(name: str, part: str):
    """(sizes x of the control models, run seeds, all seeds) of one ``CONTROL_PLAN`` entry,
    read from the quick configs."""
    for config in experiment_configs(name, "quick"):
        if part in (config.fit, config.target.family):
            widths = sorted({m.width for m in config.control_models})
            per_unit = 2 * (config.target.n_inputs + 1) if name == "table1" else 1
            return ([float(w * per_unit) for w in widths], config.seeds,
                    config.seeds + config.control_seeds)
    raise AssertionError(f"no quick config of {name} for {part}")


DESIGNS = {key: _design(*key) for key in CONTROL_PLAN["quick"]}


def _table(rng, sizes, n_seeds, effect, positive_sd, negative_sd):
    """ln nMSE by size (rows) and seed (columns): every x/4 pair differs by ``effect`` plus a
    per-seed slope of sd ``positive_sd`` (the positive control's per-seed Δ; centred on the
    sizes' mean, so that it leaves a seed's mean over sizes alone), and each seed is shifted
    by a common offset of sd ``negative_sd / √2`` (a difference of two seeds:
    ``negative_sd``, the negative control's per-pair Δ)."""
    log_x = np.log(np.asarray(sizes))[:, None] / np.log(4.0)
    log_x = log_x - log_x.mean()
    slope = effect + rng.normal(0.0, positive_sd, n_seeds)
    offset = rng.normal(0.0, negative_sd / np.sqrt(2.0), n_seeds)
    return pd.DataFrame(log_x * slope + offset, index=sizes, columns=range(n_seeds))


def _verdicts(table, control_seeds=()):
    negative, positive = control_claims("fig3", table, "dense", "activated_units", LN,
                                        control_seeds=control_seeds)
    return negative, positive


def test_the_plan_gives_each_negative_control_two_seeds_a_side_or_more():
    for key, (sizes, run, everything) in DESIGNS.items():
        assert len(everything) // 2 >= 2, key
        assert not set(everything[len(run):]) & set(run), key
        assert len(sizes) >= 2, key


@pytest.mark.parametrize("n_seeds", sorted({len(d[2]) for d in DESIGNS.values()}))
def test_a_negative_control_on_a_true_tie_reads_supported_at_most_5_percent(n_seeds):
    """1 000 ties at the design's seed count, with the noisiest measured seed variance:
    the one-sided 95 % Clopper–Pearson bound on P(supported) stays ≤ 0.05."""
    rng = np.random.default_rng(100 + n_seeds)
    sizes = [16.0, 64.0, 256.0, 1024.0]
    worst = max(noise[2] for noise in CONTROL_NOISE.values())
    supported = 0
    for _ in range(1_000):
        negative, _ = _verdicts(_table(rng, sizes, n_seeds, -0.5, 0.05, worst))
        supported += negative.verdict == "supported"
    low, high = clopper_pearson(supported, 1_000, alternative="less")
    assert high <= 0.05, (supported, high)


def test_a_negative_control_fails_when_the_two_seed_halves_truly_differ():
    """At Figure 2's design and measured noise, a planted gap of 3 × SESOI between the
    disjoint halves reads supported — the control FAILED — in ≥ 80 % of runs (Clopper–Pearson
    lower bound), so its "passed" can fail; at 2 seeds a side (no design) it cannot, and says
    so."""
    sizes, _, seeds = DESIGNS[("fig2", "exact")]
    n, noise = len(seeds), CONTROL_NOISE[("fig2", "exact")]
    half = n // 2
    rng = np.random.default_rng(7)
    failed = 0
    for _ in range(200):
        table = _table(rng, sizes, n, noise[0], noise[1], noise[2])
        table.iloc[:, :half] -= 3 * LN.value
        negative, _ = _verdicts(table)
        failed += control_status("negative control", negative.verdict) == "FAILED"
    assert clopper_pearson(failed, 200, alternative="greater")[0] >= 0.8, failed
    table = _table(rng, sizes, 4, noise[0], noise[1], noise[2])
    table.iloc[:, :2] -= 3 * LN.value
    assert control_status("negative control", _verdicts(table)[0].verdict) \
        == "COULD NOT FAIL"


@pytest.mark.parametrize("key", sorted(CONTROL_PLAN["quick"]))
def test_a_positive_control_at_the_measured_effect_reads_supported_with_power_08(key):
    """The positive control with every seed the reference has (run + control seeds), at the
    effect and seed sd measured at quick: supported in ≥ 80 % of 200 runs (Clopper–Pearson
    lower bound); with the run's seeds alone the noisiest ones could not (see below)."""
    sizes, run, seeds = DESIGNS[key]
    effect, positive_sd, negative_sd = CONTROL_NOISE[key]
    rng = np.random.default_rng(sorted(CONTROL_PLAN["quick"]).index(key))
    supported = 0
    for _ in range(200):
        table = _table(rng, sizes, len(seeds), effect, positive_sd, negative_sd)
        _, positive = _verdicts(table.set_axis(list(seeds), axis=1), seeds[len(run):])
        supported += positive.verdict == "supported"
    assert clopper_pearson(supported, 200, alternative="greater")[0] >= 0.8, (key, supported)


def test_without_control_seeds_the_noisiest_positive_controls_are_underpowered():
    """The threshold the control seeds move: Table 1's positive control at its 3 run seeds
    reads supported in under half of the runs (MDE > SESOI), at its 12 seeds in ≥ 80 %."""
    sizes, run, seeds = DESIGNS[("table1", "exact")]
    noise = CONTROL_NOISE[("table1", "exact")]
    rng = np.random.default_rng(11)
    counts = {}
    for n in (len(run), len(seeds)):
        counts[n] = sum(_verdicts(_table(rng, sizes, n, *noise))[1].verdict == "supported"
                        for _ in range(200))
    assert counts[len(run)] < 100 and counts[len(seeds)] >= 160, counts


def test_the_control_line_names_the_control_seeds():
    sizes, run, seeds = DESIGNS[("fig3", "exact")]
    table = _table(np.random.default_rng(1), sizes, len(seeds), -0.7, 0.04, 0.05)
    negative, positive = _verdicts(table.set_axis(list(seeds), axis=1), seeds[len(run):])
    assert f"{len(seeds) - len(run)} control seeds" in negative.claim
    assert f"over {len(seeds)} seeds" in positive.claim
    # only the sizes every seed has count: a size missing at one seed is left out
    table.iloc[-1, 0] = np.nan
    negative, _ = _verdicts(table.set_axis(list(seeds), axis=1), seeds[len(run):])
    assert f"over {len(sizes) - 1} activated_units" in negative.evidence


# The image experiments' controls (``experiments.papers.real_data``), in test error, at the
# quick preset's control seeds (``CONTROL_SEEDS``) and the seed noise measured there
# (``CONTROL_NOISE``): the negative control through ``control_claims`` on the reference's
# table, the positive one through ``real_data_controls`` on result rows, the code their
# claims.csv comes from.

IMAGES = ("cifar", "comet_images", "continual")
IMAGE_X = {"cifar": "activated_units", "comet_images": "width", "continual": "final"}


@functools.lru_cache(maxsize=None)
def _image_design(name: str):
    """(the reference's sizes for the controls, run seeds, all seeds) of an image
    experiment's quick config (built once: the continual config matches every model's
    size)."""
    from experiments.papers.real_data import experiment_config

    config = experiment_config(name, "quick", "digits")
    sizes = {"cifar": lambda: config.reference_activated(),
             "comet_images": lambda: config.reference_widths(),
             "continual": lambda: ("final",)}[name]()
    return list(sizes), config.seeds, config.seeds + config.control_seeds


def _image_table(name, rng, noise, gap=0.0, n_seeds=None):
    """(the reference's simulated test errors by size and seed, as ``_table`` builds them
    around 0.1, with ``gap`` added to the first half of the seeds; its run seeds; its control
    seeds) at the quick design, or at ``n_seeds`` run seeds and none."""
    sizes, run, seeds = _image_design(name)
    if n_seeds is not None:
        run = seeds = tuple(range(n_seeds))
    numeric = [float(s) if name != "continual" else 1.0 for s in sizes]
    table = 0.1 + _table(rng, numeric, len(seeds), *noise)
    table.iloc[:, :len(seeds) // 2] += gap
    return table.set_axis(sizes, axis=0).set_axis(list(seeds), axis=1), run, seeds[len(run):]


def _image_negative(name, rng, noise, gap=0.0, n_seeds=None):
    from experiments.analysis.claims import SESOI

    table, _, control = _image_table(name, rng, noise, gap, n_seeds)
    return control_claims(name, table, "reference", IMAGE_X[name], SESOI["test_error"],
                          unit="Δ test error", control_seeds=control)[0]


def _image_positive(name, rng, noise):
    """The positive control by ``real_data_controls`` on rows of the simulated table;
    continual's: the oracle, ``noise[0]`` below the reference with per-seed sd ``noise[1]``,
    at the run's seeds."""
    from experiments.papers.real_data import CONTROL_REFERENCE
    from experiments.papers.real_data._verdicts import real_data_controls

    table, run, control = _image_table(name, rng, noise)
    reference, x = CONTROL_REFERENCE[name], IMAGE_X[name]
    rows = [{"model_label": reference, x: size, "seed": seed, "test_error": value}
            for size, values in table.iterrows() for seed, value in values.items()]
    positive = None
    if name == "continual":
        positive = "oracle"
        rows += [{"model_label": positive, x: table.index[0], "seed": seed,
                  "test_error": table.iloc[0][seed] + noise[0] + rng.normal(0.0, noise[1])}
                 for seed in run]
    return real_data_controls(name, pd.DataFrame(rows), reference, x, "test_error",
                              "test error", positive=positive, control_seeds=control)[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", IMAGES)
def test_an_image_negative_control_reads_supported_at_most_5_percent_on_a_tie(name):
    """1 000 ties at the experiment's quick design and measured noise: the one-sided 95 %
    Clopper–Pearson bound on P(negative control supported) stays ≤ 0.05. (The rule is the
    synthetic experiments', whose ties at every seed count run in the fast tier above.)"""
    from experiments.papers.real_data import CONTROL_NOISE

    rng = np.random.default_rng(IMAGES.index(name) + 40)
    supported = sum(_image_negative(name, rng, CONTROL_NOISE[name]).verdict == "supported"
                    for _ in range(1_000))
    assert clopper_pearson(supported, 1_000, alternative="less")[1] <= 0.05, supported


@pytest.mark.parametrize("name", IMAGES)
def test_an_image_negative_control_could_fail_and_fails_on_a_planted_difference(name):
    """At the quick design and measured noise the negative control could read supported
    (MDE ≤ SESOI: not "COULD NOT FAIL") in ≥ 80 % of 200 ties, and with a gap of 2 × SESOI
    planted between the seed halves it FAILS in ≥ 80 % of 100 (Clopper–Pearson lower
    bounds); with the run's seeds alone it could not fail in most of 50 runs."""
    from experiments.analysis.claims import SESOI
    from experiments.papers.real_data import CONTROL_NOISE

    noise = CONTROL_NOISE[name]
    rng = np.random.default_rng(IMAGES.index(name) + 50)

    def status(**options):
        return control_status("negative control",
                              _image_negative(name, rng, noise, **options).verdict)

    able = sum(status() != "COULD NOT FAIL" for _ in range(200))
    assert clopper_pearson(able, 200, alternative="greater")[0] >= 0.8, able
    gap = -2 * SESOI["test_error"].value  # the first half lower: "lower" is the claim
    failed = sum(status(gap=gap) == "FAILED" for _ in range(100))
    assert clopper_pearson(failed, 100, alternative="greater")[0] >= 0.8, failed
    alone = sum(status(n_seeds=len(_image_design(name)[1])) == "COULD NOT FAIL"
                for _ in range(50))
    assert alone > 25, alone


@pytest.mark.parametrize("name", IMAGES)
def test_an_image_positive_control_reads_supported_with_power_08(name):
    """At the measured effect and seed sd, with run + control seeds: supported in ≥ 80 % of
    100 runs (Clopper–Pearson lower bound)."""
    from experiments.papers.real_data import CONTROL_NOISE

    rng = np.random.default_rng(IMAGES.index(name) + 60)
    supported = sum(_image_positive(name, rng, CONTROL_NOISE[name]).verdict == "supported"
                    for _ in range(100))
    assert clopper_pearson(supported, 100, alternative="greater")[0] >= 0.8, supported
    # decided as a control: alone at α, outside the claims' Holm family
    positive = _image_positive(name, rng, CONTROL_NOISE[name])
    assert positive.role == "positive control"
    assert "decided alone at α = 0.05" in positive.significance
    assert "Holm-adjusted" not in positive.significance


def test_cifars_positive_control_with_the_run_seeds_alone_is_underpowered():
    """The threshold the control seeds move: at cifar's 4 run seeds its positive control
    reads supported in under half of 100 runs (at its 88 seeds: the test above)."""
    from experiments.analysis.claims import SESOI
    from experiments.papers.real_data import CONTROL_NOISE

    rng = np.random.default_rng(70)
    alone = 0
    for _ in range(100):
        table, _, _ = _image_table("cifar", rng, CONTROL_NOISE["cifar"], n_seeds=4)
        positive = control_claims("cifar", table, "reference", "activated_units",
                                  SESOI["test_error"], unit="Δ test error")[1]
        alone += positive.verdict == "supported"
    assert alone < 50, alone
