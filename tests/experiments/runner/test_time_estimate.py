"""``reproduce --preset paper`` says first how long it will take: the
estimate extrapolates timed rows at reduced sizes, scales with the work, and is printed."""

import json

import pytest
from click.testing import CliRunner

from experiments.runner import time_estimate as estimate
from experiments.pipeline import reproduce
from experiments.runner.engine import Engine
from experiments.runner.time_estimate import (_calibration_scale, _scaled, _submission_order,
                                  estimate_sweeps)
from experiments.pipeline.reproduce import run_reproduce
from experiments.cli.reproduce import reproduce_command
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec


def _config(seeds=(0, 1), n_train=200_000, steps=20_000, name="fig2"):
    models = (ModelSpec("dense", width=8, label="dense"),
              ModelSpec("dense", width=16, label="dense 16"),
              ModelSpec("dsm", width=16, k=4, label="DSM"),
              ModelSpec("lsh", n_bits=4, n_tables=1, family="sign", label="LSH"))
    return ExperimentConfig(name=name, preset="tiny", target=TargetSpec("polynomial"),
                            models=models, seeds=seeds, n_train=n_train, n_eval=n_train // 10,
                            train_steps=steps, train_batch=64)


def _linear_timer(calls):
    """A row's time as the module's model of it: drawing the data (linear in the sizes), and
    the row: a fixed part (one per model kind, the dense one ∝ its width) and parts linear in
    the sizes and steps."""
    fixed = {"dense": 3.0 / 8, "dsm": 1.0, "lsh": 0.5}

    def timer(config, spec, seed, device):
        calls.append((config.n_train, spec.kind, seed))
        return 2e-5 * (config.n_train + config.n_eval), \
            fixed[spec.kind] * (spec.width if spec.kind == "dense" else 1) + 1e-5 * (config.n_train + config.n_eval) + \
            1e-3 * config.train_steps
    return timer


def test_the_extrapolation_recovers_a_row_linear_in_the_sizes():
    calls = []
    config = _config()
    result = estimate_sweeps({"fig2": [config]}, device="cpu", per_kind=2,
                             timer=_linear_timer(calls), progress=False)
    full = 1e-5 * (200_000 + 20_000) + 1e-3 * 20_000
    data = 2 * 2e-5 * (200_000 + 20_000)  # drawn once per seed, for all models
    # 2 seeds × 4 models
    expected = 2 * sum(fixed + full for fixed in (3.0, 6.0, 1.0, 0.5)) + data
    assert result.seconds == pytest.approx(expected, rel=1e-3)
    # the range: both dense rows as fast as the faster one, or as slow as the slower
    assert result.low == pytest.approx(expected - 2 * 3.0, rel=1e-3)
    assert result.high == pytest.approx(expected + 2 * 3.0, rel=1e-3)
    assert result.rows == 8 and result.sampled == 4
    one = estimate_sweeps({"fig2": [config]}, device="cpu", per_kind=1,
                          timer=_linear_timer([]), progress=False)
    assert one.sampled == 3 and one.low == one.seconds == one.high  # a kind, a sample
    # timed small: at the calibration sizes only, never at the full one
    assert max(n for n, _, _ in calls) <= 2 * _calibration_scale(config) * 200_000 < 200_000


def test_the_estimate_counts_the_control_rows():
    """The reference model's rows at the control seeds are rows too: with the two dense
    models at 3 control seeds, 6 rows more, each timed as its kind's, and 3 more data draws."""
    config = _config()
    base = estimate_sweeps({"fig2": [config]}, device="cpu", per_kind=2,
                           timer=_linear_timer([]), progress=False)
    controlled = config.with_(control_seeds=(5, 6, 7), control_models=config.models[:2])
    result = estimate_sweeps({"fig2": [controlled]}, device="cpu", per_kind=2,
                             timer=_linear_timer([]), progress=False)
    full = 1e-5 * (200_000 + 20_000) + 1e-3 * 20_000
    data = 2e-5 * (200_000 + 20_000)
    dense_mean = (3.0 + 6.0) / 2 + full  # the dense kind's mean sampled row
    assert result.rows == base.rows + 6
    assert result.seconds == pytest.approx(base.seconds + 6 * dense_mean + 3 * data, rel=1e-3)


def test_the_estimate_scales_with_the_work():
    base = estimate_sweeps({"fig2": [_config()]}, device="cpu", timer=_linear_timer([]),
                           progress=False)
    seeds = estimate_sweeps({"fig2": [_config(seeds=(0, 1, 2, 3))]}, device="cpu",
                            timer=_linear_timer([]), progress=False)
    assert seeds.seconds == pytest.approx(2 * base.seconds, rel=1e-9)
    steps = estimate_sweeps({"fig2": [_config(steps=40_000)]}, device="cpu",
                            timer=_linear_timer([]), progress=False)
    assert steps.seconds > 1.5 * base.seconds  # 20 s of ~25 s per row are SGD steps
    two = estimate_sweeps({"fig2": [_config()]}, device="cpu", timer=_linear_timer([]),
                          progress=False, workers=2)
    assert "with 2 workers" in two.text() and two.seconds == base.seconds


def test_a_small_sweep_is_timed_whole():
    config = _config(n_train=1_000, steps=40)
    assert _calibration_scale(config) == 1.0
    calls = []
    estimate_sweeps({"x": [config]}, device="cpu", per_kind=1, timer=_linear_timer(calls),
                    progress=False)
    assert {n for n, _, _ in calls} == {1_000}  # warm-up and the timing, both full size
    assert _scaled(_config(), 0.01).train_steps == 200
    with pytest.raises(ValueError, match="scale"):
        _scaled(config, 0.0)
    with pytest.raises(ValueError, match="per_kind"):
        estimate_sweeps({"x": [config]}, per_kind=0)


def test_a_wide_exact_fit_is_timed_with_two_rows_per_coefficient():
    """Below about one training row per coefficient an exact fit's normal matrix is rank
    deficient and the fit takes another, slower path than the full-size row: a calibration
    row of an exact fit keeps ROWS_PER_COEF rows per coefficient (one of the
    paper's 16 384-wide Table 1 rows was timed over 700 s on 2 000 rows); SGD rows are not
    raised, and a model just under the line keeps the sweep's s1."""
    from experiments.runner.time_estimate import ROWS_PER_COEF, _row_scale

    def sweep(width, fit="exact"):
        return ExperimentConfig(name="x", preset="tiny", target=TargetSpec("polynomial"),
                                models=(ModelSpec("dense", width=width, label="dense"),),
                                seeds=(0,), n_train=200_000, n_eval=20_000, train_steps=20_000,
                                train_batch=64, fit=fit)

    assert ROWS_PER_COEF == 2
    s1 = _calibration_scale(sweep(8))
    assert s1 == 0.01  # 2 000 training rows
    # the line: 2 rows per coefficient of 2 000 rows is width 1 000
    assert _row_scale(sweep(1000), sweep(1000).models[0], s1) == s1
    assert _row_scale(sweep(1001), sweep(1001).models[0], s1) == pytest.approx(0.01001)
    assert _row_scale(sweep(4096), sweep(4096).models[0], s1) == pytest.approx(0.04096)
    assert _row_scale(sweep(4096, "adam"), sweep(4096).models[0], s1) == s1
    assert _row_scale(sweep(4096).with_(n_train=4_000), sweep(4096).models[0], 0.5) == 1.0
    calls = []
    config = sweep(4096)
    result = estimate_sweeps({"x": [config]}, device="cpu", timer=_linear_timer(calls),
                             progress=False)
    # warm-up at the sweep's s1, then the row at 2 rows per coefficient and twice that
    assert [n for n, _, _ in calls] == [2_000, 8_192, 16_384]
    # and the row linear in the sizes is still recovered exactly
    full = 3.0 / 8 * 4096 + 1e-5 * 220_000 + 1e-3 * 20_000 + 2e-5 * 220_000
    assert result.seconds == pytest.approx(full, rel=1e-3)
    sgd = []
    estimate_sweeps({"x": [sweep(4096, "adam")]}, device="cpu", timer=_linear_timer(sgd),
                    progress=False)
    assert [n for n, _, _ in sgd] == [2_000, 2_000, 4_000]


def test_a_row_growing_faster_than_linearly_is_timed_again_larger():
    """A row whose time more than SUPERLINEAR-folds when its sizes double (LSQR on fewer rows
    than buckets) is timed again at twice the sizes until it grows at most SUPERLINEAR-fold;
    the extrapolation then uses the linear part."""
    from experiments.runner.time_estimate import SUPERLINEAR

    assert SUPERLINEAR == 2.2

    def make(growth_below, knee=16_000):
        """Linear above ``knee`` training rows (1 s + 1e-4 s a row); below it each halving
        of the rows divides the time by ``growth_below``."""
        calls = []

        def timer(config, spec, seed, device):
            n = config.n_train
            calls.append(n)
            t = 1.0 + 1e-4 * max(n, knee)
            while n < knee:
                n, t = 2 * n, t / growth_below
            return 0.0, t
        return calls, timer

    config = _config(seeds=(0,)).with_(models=(ModelSpec("dsm", width=16, k=4, label="DSM"),))
    full = 1.0 + 1e-4 * 200_000
    calls, timer = make(growth_below=4.0)
    result = estimate_sweeps({"x": [config]}, device="cpu", timer=timer, progress=False)
    # warm-up at 2 000, then 2 000 / 4 000 (×4), 8 000 (×4), 16 000 (×4: t(16 000) = 2.6
    # against 0.65), 32 000 (linear: 4.2 / 2.6 = 1.6×)
    assert calls == [2_000, 2_000, 4_000, 8_000, 16_000, 32_000]
    assert result.samples[0]["doublings"] == 3 and result.samples[0]["scale"] == 0.08
    assert result.seconds == pytest.approx(full, rel=1e-9)
    assert "1 sampled rows grew faster than linearly" in result.text()
    # the line, crossed: growing 2.15-fold from 2 000 to 4 000 rows is kept at the sweep's
    # sizes (extrapolated as it is); 2.25-fold is timed again
    for growth, expected in ((2.15, [2_000, 2_000, 4_000]),
                             (2.25, [2_000, 2_000, 4_000, 8_000])):
        calls, timer = make(growth_below=growth, knee=4_000)
        result = estimate_sweeps({"x": [config]}, device="cpu", timer=timer, progress=False)
        assert calls == expected, growth
        assert result.samples[0]["doublings"] == len(expected) - 3
    assert "faster than linearly" in result.text()


def test_the_samples_are_kept_and_the_slowest_is_named():
    """What the estimate rests on: each sampled row's two timings and its extrapolation,
    and the text names the slowest (the row that sets the range's top)."""
    result = estimate_sweeps({"fig2": [_config()]}, device="cpu", per_kind=2,
                             timer=_linear_timer([]), progress=False)
    assert len(result.samples) == result.sampled == 4
    by_model = {row["model"]: row for row in result.samples}
    wide = by_model["dense;width=16;n_tables=1"]
    assert wide["fit"] == "exact" and wide["scale"] == 0.01
    # seconds_s1 = 6 + 1e-5·2 200 + 1e-3·200; seconds_s2 adds as much again of the linear part
    assert wide["seconds_s1"] == pytest.approx(6.0 + 0.022 + 0.2)
    assert wide["seconds_s2"] == pytest.approx(6.0 + 0.044 + 0.4)
    assert wide["seconds_full"] == pytest.approx(6.0 + 2.2 + 20.0, rel=1e-9)
    assert max(row["seconds_full"] for row in result.samples) == wide["seconds_full"]
    assert ("slowest sampled row: fig2 dense;width=16;n_tables=1 (exact), 28 s a row, "
            "timed 6.22 s at s = 0.01 and 6.44 s at s = 0.02" in result.text())


def test_the_time_is_broken_down_by_model_kind_heaviest_first():
    """Where the hours go: per (model kind, regime), the rows times the mean of the kind's
    samples, and the data drawn once per seed; the parts add up to the total."""
    result = estimate_sweeps({"fig2": [_config()]}, device="cpu", per_kind=2,
                             timer=_linear_timer([]), progress=False)
    # a full row: its fixed part + 1e-5·220 000 + 1e-3·20 000 = fixed + 22.2 s
    assert result.per_kind[("dense", "exact")] == (4, pytest.approx(4 * (3.0 + 6.0) / 2
                                                                    + 4 * 22.2))
    assert result.per_kind[("dsm", "exact")] == (2, pytest.approx(2 * (1.0 + 22.2)))
    assert result.per_kind[("lsh", "exact")] == (2, pytest.approx(2 * (0.5 + 22.2)))
    assert result.per_kind[("data", "")] == (0, pytest.approx(2 * 2e-5 * 220_000))
    assert sum(s for _, s in result.per_kind.values()) == pytest.approx(result.seconds)
    line = next(li for li in result.text().splitlines() if "by model kind" in li)
    assert line == ("  by model kind: dense (exact) 4 rows 2 min (51%), dsm (exact) 2 rows "
                    "46 s (22%), lsh (exact) 2 rows 45 s (22%), drawing the data 9 s (4%)")
    two = estimate_sweeps({"fig2": [_config()]}, device="cpu", per_kind=2,
                          timer=_linear_timer([]), progress=False, workers=2)
    assert "dense (exact) 4 rows 53 s (51%)" in two.text()  # divided by the workers


def test_a_real_calibration_comes_close_to_the_real_time():
    from experiments.runner.sweep import run_sweep
    import tempfile
    import time

    config = _config(seeds=(0, 1), n_train=20_000, steps=400).with_(fit="adam")
    assert _calibration_scale(config) == 0.125  # timed at 1/8 and 1/4 of the sizes and steps
    result = estimate_sweeps({"fig2": [config]}, device="cpu", per_kind=1, progress=False)
    with tempfile.TemporaryDirectory() as out:
        # CPU time, as the estimate on a CPU: a busy machine slows both clocks' wall alike
        start = time.thread_time()
        run_sweep([config], out, device="cpu", progress=False)
        actual = time.thread_time() - start
    assert 0.25 < result.seconds / actual < 4, (result.seconds, actual)


@pytest.mark.slow
def test_reproduce_paper_prints_the_estimate_first(tmp_path, monkeypatch):
    seen = {}

    def fake_estimate(experiments, device="auto", workers=1, progress=True, excluded=(),
                      engine=None):
        seen.update(experiments=experiments, excluded=excluded, workers=workers, engine=engine)
        return estimate.Estimate(seconds=7200.0, low=3600.0, high=14400.0, rows=12,
                                 per_experiment={"fig2": (12, 7200.0)}, sampled=2,
                                 calibration_seconds=1.0, device="cpu", workers=workers,
                                 excluded=list(excluded))

    def run(out):
        out.mkdir(parents=True, exist_ok=True)
        (out / "x.txt").write_text("x")
        return [out / "x.txt"]

    def fake_steps(preset, device="auto", workers=None, scheduler=None):
        return [("checks", {"preset": preset}, run),
                ("fig2", {"settings": ["a"]}, reproduce.ScalingStep("fig2", "tiny"))]

    monkeypatch.setattr(estimate, "estimate_sweeps", fake_estimate)
    monkeypatch.setattr(reproduce, "steps", fake_steps)
    monkeypatch.setattr(reproduce, "_run_steps", lambda *args: {})
    lines = []
    run_reproduce("paper", tmp_path, echo=lines.append, yes=True)
    assert lines[0].startswith("Estimated time of this run on cpu: 2.0 h (range 1.0 h – 4.0 h)")
    assert "not included: checks" in lines[0] and list(seen["experiments"]) == ["fig2"]
    # 2 h without yes: the estimate, then a refusal naming --yes, nothing run
    lines.clear()
    with pytest.raises(ValueError, match="exceeds an hour; nothing was computed. Rerun the "
                                         "same command with --yes"):
        run_reproduce("paper", tmp_path, echo=lines.append)
    assert lines[0].startswith("Estimated time of this run on cpu: 2.0 h")
    # a step already done is not estimated
    (tmp_path / "fig2").mkdir()
    (tmp_path / "fig2" / "done.json").write_text(json.dumps({"config": {"settings": ["a"]}}))
    run_reproduce("paper", tmp_path, echo=lines.append, yes=True)
    assert seen["experiments"] == {}
    lines.clear()
    run_reproduce("quick", tmp_path, echo=lines.append)  # other presets: no estimate
    assert lines == []
    assert seen["engine"] is None  # no workers: the calibration runs in this process
    # with workers, their engine is open before the estimate, which times its rows there
    run_reproduce("paper", tmp_path, force=True, echo=lines.append, workers=1,
                  yes=True)
    assert isinstance(seen["engine"], Engine) and seen["engine"].workers == 1
    assert list(seen["experiments"]) == ["fig2"] and seen["workers"] == 1
    # with only: the steps it names, and no other
    run_reproduce("paper", tmp_path, force=True, echo=lines.append, only=("checks",),
                  yes=True)
    assert seen["experiments"] == {} and list(seen["excluded"]) == ["checks"]
    run_reproduce("paper", tmp_path, force=True, echo=lines.append, only=("fig2",),
                  yes=True)
    assert list(seen["experiments"]) == ["fig2"] and list(seen["excluded"]) == []


def _deterministic_timer(config, spec, seed, device):
    """A picklable model of a row's time (it runs on Dask workers): linear in the sizes,
    growing faster than linearly for the LSH rows below 8 000 training points (so that some
    rows are timed again larger, ``SUPERLINEAR``)."""
    n = config.n_train + config.n_eval
    superlinear = 3.0 * (config.n_train / 2_000) ** 2 if spec.kind == "lsh" and \
        config.n_train < 8_000 else 0.0
    return 2e-5 * n, (spec.width or 4) * 0.1 + 1e-5 * n + 1e-3 * config.train_steps + superlinear


@pytest.mark.slow
def test_a_calibration_on_workers_gives_the_serial_numbers():
    """``engine``: the sampled rows are timed on Dask workers, several at once, and the
    estimate is assembled in the serial order: the same timings give the same numbers."""
    sweeps = {"fig2": [_config(), _config(n_train=40_000).with_(fit="adam")],
              "fig4": [_config(seeds=(0, 1, 2), name="fig4")]}
    serial = estimate_sweeps(sweeps, device="cpu", timer=_deterministic_timer, progress=False)
    with Engine(workers=2, device="cpu") as engine:
        parallel = estimate_sweeps(sweeps, device="cpu", timer=_deterministic_timer,
                                   progress=False, engine=engine)
    assert any(row["doublings"] for row in serial.samples)  # the loop ran on the workers too
    for field in ("seconds", "low", "high", "rows", "per_experiment", "sampled", "samples",
                  "device", "workers"):
        assert getattr(parallel, field) == getattr(serial, field), field
    assert parallel.text().splitlines()[1] == serial.text().splitlines()[1]
    assert "each timed on the workers (CPU time" in parallel.text()
    assert "each timed here (CPU time" in serial.text()


def test_the_estimate_option_prints_and_runs_nothing(tmp_path):
    result = CliRunner().invoke(reproduce_command, ["--preset", "tiny", "--out",
                                                    str(tmp_path), "--estimate", "--device",
                                                    "cpu"])
    assert result.exit_code == 0, result.output
    assert "Estimated time of this run on cpu" in result.output
    assert "not included: targets, sdm, checks" in result.output
    assert not any((tmp_path / name).exists() for name in ("fig2", "index.json"))


@pytest.mark.slow
def test_the_estimate_option_with_workers_times_the_rows_there(tmp_path):
    result = CliRunner().invoke(reproduce_command, ["--preset", "tiny", "--out",
                                                    str(tmp_path), "--estimate", "--device",
                                                    "cpu", "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "with 2 workers" in result.output and "each timed on the workers" in result.output
    assert not any((tmp_path / name).exists() for name in ("fig2", "index.json"))


def test_the_widest_exact_fits_are_handed_to_the_workers_first():
    """A wide exact fit's calibration takes minutes: started last, it would keep every other
    worker waiting. The order is by the spec's width (or tables × buckets), exact fits only,
    the plan's order kept among equals."""
    exact, sgd = _config(), _config().with_(fit="adam")
    wide = ModelSpec("dsm", width=4096, k=64, label="wide")
    table = ModelSpec("lsh", n_bits=10, n_tables=4, family="sign", label="table")
    tasks = [(exact, spec) for spec in exact.models] + [(sgd, wide), (exact, table),
                                                        (exact, wide)]
    order = _submission_order(tasks)
    assert order[:3] == [5, 6, 1]  # 4 × 2^10 = 4096 and width 4096 (as listed), then 16
    assert sorted(order) == list(range(len(tasks)))
    assert order.index(4) > order.index(0)  # the same width trained by Adam: not first
