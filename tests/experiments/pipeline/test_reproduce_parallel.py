"""``sparselab reproduce --workers N`` runs every step at once on Dask workers: the
same files, numbers and verdicts as the serial run, the same markers and resume."""

import json
import os
import pathlib

import pandas as pd
import pytest

from experiments.pipeline import reproduce
from experiments.runner.engine import local_cluster
from experiments.pipeline.reproduce import ChecksStep, ImageStep, ScalingStep, run_reproduce
from experiments.pipeline.reproduce_parallel import _run_step_task, _submission_order
from experiments.runner.rows import ROW_KEY

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def address():
    """A local cluster of 2 single-threaded worker processes for the module's tests."""
    with local_cluster(2) as cluster:
        yield cluster.scheduler_address


def _fake_steps(checks: tuple[str, ...] | None, scaling: tuple[str, ...]):
    """``reproduce.steps`` cut down to a few cheap steps of every sort: the SDM curves (one
    task), if ``checks`` those checks (a task each, merged), and the scaling experiments
    ``scaling`` at the tiny preset (rows on the workers, outputs in the driver)."""
    def steps(preset, device="auto", workers=None, scheduler=None):
        def sdm(out):  # nested: shipped to the workers by value, like a user's step
            from experiments.papers.sdm_curves import write_sdm_curves
            return write_sdm_curves(out, n=64, radii=(5, 11), weightings=("binary",))

        result = [("sdm", {"n": 64}, sdm)]
        if checks:
            result.append(("checks", {"preset": "quick", "only": list(checks)},
                           ChecksStep("quick", only=checks)))
        for name in scaling:
            result.append((name, {"experiment": name, "preset": preset},
                           ScalingStep(name, preset, device, workers, scheduler)))
        return result
    return steps


def _rows(path: pathlib.Path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype={"settings": str}).drop(columns=["wall_s"])
    return frame.sort_values(ROW_KEY).reset_index(drop=True)


def _checks(out: pathlib.Path) -> dict:
    """checks/results.json of ``out`` without the times (``seconds``), which differ from run
    to run, and with its plots' paths relative to ``out``."""
    payload = json.loads((out / "checks" / "results.json").read_text())
    payload.pop("seconds")
    for result in payload["results"]:
        result.pop("seconds")
        result["plots"] = [str(pathlib.Path(p).relative_to(out)) for p in result["plots"]]
    return payload


def _assert_same_outputs(serial: pathlib.Path, parallel: pathlib.Path, names, checks,
                         scaling):
    for name in scaling:
        pd.testing.assert_frame_equal(_rows(parallel / name / "results.csv"),
                                      _rows(serial / name / "results.csv"), check_exact=True)
        assert (parallel / name / "claims.csv").read_text() == \
            (serial / name / "claims.csv").read_text()
    assert (parallel / "sdm" / "sdm_curves.csv").read_bytes() == \
        (serial / "sdm" / "sdm_curves.csv").read_bytes()
    if checks:
        assert _checks(parallel) == _checks(serial)
        assert (parallel / "checks" / "table.txt").read_text() == \
            (serial / "checks" / "table.txt").read_text()
    index = [json.loads((folder / "index.json").read_text()) for folder in (serial, parallel)]
    assert index[0] == index[1] and list(index[1]["steps"]) == names  # same files, step order
    for name in names:
        markers = [json.loads((folder / name / "done.json").read_text())
                   for folder in (serial, parallel)]
        assert markers[0]["config"] == markers[1]["config"]
        assert markers[0]["files"] == markers[1]["files"]
    assert (parallel / "report.md").read_text() == (serial / "report.md").read_text()


def _run_both(tmp_path, monkeypatch, address, checks, scaling):
    monkeypatch.setattr(reproduce, "steps", _fake_steps(checks, scaling))
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    run_reproduce("tiny", serial, device="cpu", echo=lambda s: None)
    lines = []
    written = run_reproduce("tiny", parallel, device="cpu", echo=lines.append,
                            scheduler=address)
    return serial, parallel, written, lines


@pytest.mark.slow
def test_every_step_on_two_workers_writes_what_the_serial_run_writes(tmp_path, monkeypatch,
                                                                     address):
    serial, parallel, written, lines = _run_both(tmp_path, monkeypatch, address, None,
                                                 ("table2",))
    names = ["sdm", "table2"]
    assert list(written) == names
    _assert_same_outputs(serial, parallel, names, checks=False, scaling=("table2",))
    assert {line.split("]")[0] + "]" for line in lines if "done (" in line} == \
        {f"[{n}]" for n in names}
    # the rerun finds every marker and computes nothing
    lines.clear()
    assert run_reproduce("tiny", parallel, device="cpu", echo=lines.append,
                         scheduler=address) == written
    assert lines == [f"[{n}] already done, skipping (use --force to redo)" for n in names]


@pytest.mark.slow
def test_checks_split_into_tasks_merge_into_the_serial_runs_files(tmp_path, monkeypatch,
                                                                  address):
    checks, scaling = ("collisions", "simulations"), ("table2", "fig4")
    serial, parallel, written, lines = _run_both(tmp_path, monkeypatch, address, checks,
                                                 scaling)
    _assert_same_outputs(serial, parallel, ["sdm", "checks", "table2", "fig4"], checks=True,
                         scaling=scaling)
    assert any(line.startswith("[checks] collisions: ") for line in lines)
    # plots sit in each check's folder, as the serial run writes them
    plots = [f for f in written["checks"] if f.endswith(".png")]
    assert plots and all((parallel / f).is_file() for f in plots)


@pytest.mark.slow
def test_a_stale_or_forced_step_is_redone_and_a_done_one_is_not(tmp_path, monkeypatch,
                                                                address):
    calls = []

    def steps(preset, device="auto", workers=None, scheduler=None):
        def step(out, tag):
            # runs on a worker: what it did is seen through its folder only
            out.mkdir(parents=True, exist_ok=True)
            (out / "x.txt").write_text(f"{tag} {os.getpid()}")
            return [out / "x.txt"]
        return [(name, {"version": version[name]},
                 lambda out, name=name: step(out, f"{name}{version[name]}"))
                for name in ("a", "b")]

    version = {"a": 1, "b": 1}
    monkeypatch.setattr(reproduce, "steps", steps)
    monkeypatch.setattr(reproduce, "write_report", lambda *args: None)
    run_reproduce("tiny", tmp_path, echo=calls.append, scheduler=address)
    assert (tmp_path / "a" / "x.txt").read_text().split()[0] == "a1"
    assert int((tmp_path / "a" / "x.txt").read_text().split()[1]) != os.getpid()  # a worker
    version["b"] = 2
    calls.clear()
    run_reproduce("tiny", tmp_path, echo=calls.append, scheduler=address)
    assert calls[:2] == ["[a] already done, skipping (use --force to redo)",
                         "[b] running (done under another configuration: redone)"]
    assert (tmp_path / "b" / "x.txt").read_text().split()[0] == "b2"
    calls.clear()
    run_reproduce("tiny", tmp_path, force=True, echo=calls.append, scheduler=address)
    assert calls[:2] == ["[a] running", "[b] running"]
    assert json.loads((tmp_path / "b" / "done.json").read_text())["files"] == ["b/x.txt"]


@pytest.mark.slow
def test_a_failing_step_stops_the_run_and_the_rerun_does_only_the_rest(tmp_path, monkeypatch,
                                                                       address):
    fail = {"on": True}

    def steps(preset, device="auto", workers=None, scheduler=None):
        def good(out):
            out.mkdir(parents=True, exist_ok=True)
            (out / "x.txt").write_text("x")
            return [out / "x.txt"]

        def bad(out, fail=fail["on"]):
            if fail:
                raise RuntimeError("this step failed")
            return good(out)
        return [("good", {}, good), ("bad", {}, bad)]

    monkeypatch.setattr(reproduce, "steps", steps)
    monkeypatch.setattr(reproduce, "write_report", lambda *args: None)
    with pytest.raises(RuntimeError, match="this step failed"):
        run_reproduce("tiny", tmp_path, echo=lambda s: None, scheduler=address)
    assert not (tmp_path / "bad" / "done.json").exists()
    assert not (tmp_path / "index.json").exists()
    fail["on"] = False
    lines = []
    written = run_reproduce("tiny", tmp_path, echo=lines.append, scheduler=address)
    assert written == {"good": ["good/x.txt"], "bad": ["bad/x.txt"]}
    assert "[bad] running" in lines


def test_a_step_task_holds_its_folder_while_it_runs(tmp_path):
    from experiments.runner import output_folder

    seen = {}

    def step(out):
        seen["holder"] = output_folder.holder(out)
        (out / "y.txt").write_text("y")
        return [out / "y.txt"]

    files, seconds = _run_step_task(step, str(tmp_path / "step"))
    assert files == [str(tmp_path / "step" / "y.txt")] and seconds >= 0
    assert seen["holder"]["pid"] == os.getpid() and seen["holder"]["alive"]
    assert output_folder.holder(tmp_path / "step") is None  # released after the step


def test_long_steps_get_the_workers_first():
    todo = [(name, {}, ScalingStep(name, "tiny") if name.startswith("fig") else
             ChecksStep("quick") if name == "checks" else
             ImageStep(name, "tiny") if name in ("cifar", "continual") else (lambda out: []))
            for name in ("targets", "sdm", "checks", "comet_similarity", "fig2", "fig3",
                         "cifar", "continual")]
    # the scaling and image experiments' rows are tasks of their own (sent by threads)
    assert [name for name, _, _ in _submission_order(todo)] == \
        ["comet_similarity", "checks", "sdm", "targets"]


@pytest.mark.slow
def test_steps_run_in_the_driver_where_the_workers_do_not_see_the_folder(tmp_path,
                                                                         monkeypatch, address):
    from experiments.pipeline import reproduce_parallel
    from experiments.runner.engine import Engine

    with Engine(scheduler=address) as engine:
        assert reproduce_parallel._sees_folder(engine, tmp_path)  # a local cluster: it does
    assert not list(tmp_path.iterdir())  # the probe is removed
    assert reproduce_parallel._read(str(tmp_path / "missing")) is None

    def steps(preset, device="auto", workers=None, scheduler=None):
        def step(out):
            out.mkdir(parents=True, exist_ok=True)
            (out / "x.txt").write_text(str(os.getpid()))
            return [out / "x.txt"]
        return [("a", {}, step), ("b", {}, step),
                ("table2", {"experiment": "table2"},
                 ScalingStep("table2", "tiny", "cpu", workers, scheduler))]

    monkeypatch.setattr(reproduce, "steps", steps)
    monkeypatch.setattr(reproduce_parallel, "_sees_folder", lambda engine, out: False)
    lines = []
    written = run_reproduce("tiny", tmp_path, device="cpu", echo=lines.append,
                            scheduler=address)
    assert list(written) == ["a", "b", "table2"]
    assert any(line.startswith("the workers do not see") and "a, b run here" in line
               for line in lines)
    assert (tmp_path / "a" / "x.txt").read_text() == str(os.getpid())  # ran here
    assert len(pd.read_csv(tmp_path / "table2" / "results.csv")) == 24  # rows on the workers


def test_steps_refuse_bad_settings_at_construction():
    for make, match in ((lambda: ScalingStep("figX", "tiny"), "name must be one of"),
                        (lambda: ScalingStep("fig2", "huge"), "preset must be one of"),
                        (lambda: ScalingStep("fig2", "tiny", "tpu"), "device must be one of"),
                        (lambda: ChecksStep("tiny2"), "preset must be one of"),
                        (lambda: ChecksStep("quick", only="collisions"), "only must be"),
                        (lambda: ChecksStep("quick", seed=-1), "seed must be")):
        with pytest.raises(ValueError, match=match):
            make()
    with pytest.raises(ValueError, match="unknown check"):
        ChecksStep("quick", only=("nope",)).names()
    step = ChecksStep("quick", only=("collisions",))
    with pytest.raises(ValueError, match="results must be those of the checks"):
        step.merge(pathlib.Path("unused"), [])


@pytest.mark.slow
def test_a_check_made_of_parts_is_the_check_run_whole(tmp_path):
    """The parallel run's split of a check — its real run, then each planted run apart — gives
    the result ``Check.run`` gives (``seconds`` aside), and the parts' bookkeeping refuses a
    missing or extra planted run."""
    step = ChecksStep("quick", only=("collisions",))
    whole = step.run_one("collisions", tmp_path / "whole")
    real, _ = step.real_one("collisions", tmp_path / "parts")
    plan = step.power_runs("collisions")
    check = step.check("collisions")  # each plant its own runs (Planted.runs), else n_power
    assert len(plan) == sum(check.n_power if planted.runs is None else planted.runs
                            for planted in check.planted_violations())
    verdicts: dict[int, list] = {}
    for index, seed in plan:
        verdicts.setdefault(index, []).append(step.planted_one("collisions", index, seed)[0])
    parts = step.complete("collisions", real, verdicts, 1.5)
    assert parts.seconds == 1.5
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k not in ("seconds", "plots")}
    assert strip(parts) == strip(whole)
    assert parts.power_details and parts.power_details == whole.power_details
    with pytest.raises(ValueError, match="n_power"):
        step.complete("collisions", real, {i: v[:-1] for i, v in verdicts.items()}, 1.0)
    with pytest.raises(ValueError, match="every planted violation"):
        step.complete("collisions", real, {0: verdicts[0]}, 1.0)
    with pytest.raises(ValueError, match="index"):
        step.planted_one("collisions", len(verdicts), 0)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cifar", "continual", "comet_images"])
def test_image_rows_on_two_workers_are_the_serial_rows(tmp_path, address, name):
    """An image experiment's rows trained on the workers (the data sent once) are the rows
    trained here, in the same order, and give the same claims; ``rows`` then ``outputs``
    (the parallel reproduce's halves) write what the whole step writes."""
    serial = ImageStep(name, "tiny", "cpu")
    serial(tmp_path / "serial")
    parallel = ImageStep(name, "tiny", "cpu", scheduler=address)
    parallel.rows(tmp_path / "parallel", progress=False)
    assert not (tmp_path / "parallel" / "claims.csv").exists()  # rows only
    files = parallel.outputs(tmp_path / "parallel")
    assert [f.name for f in files] == [f.name for f in
                                       __import__("experiments.papers.real_data", fromlist=["x"])
                                       .output_files(tmp_path / "serial")]
    rows = [pd.read_csv(tmp_path / run / "results.csv", dtype={"settings": str})
            .drop(columns=["wall_s"], errors="ignore") for run in ("serial", "parallel")]
    pd.testing.assert_frame_equal(rows[1], rows[0], check_exact=True)
    assert (tmp_path / "parallel" / "claims.csv").read_text() == \
        (tmp_path / "serial" / "claims.csv").read_text()


def test_image_outputs_of_a_gpu_cluster_need_no_gpu_in_the_driver(tmp_path):
    """``--device cuda --scheduler`` from a driver without a GPU (the README's cluster): once
    the rows are trained on the workers, the outputs half trains nothing, contacts no cluster
    (the address here is unreachable) and resolves no device here; config.json records the
    workers' "cuda". It once resolved "cuda" in the driver and failed."""
    import json

    out = tmp_path / "run"
    ImageStep("cifar", "tiny", "cpu").rows(out, progress=False)  # as the workers would
    files = ImageStep("cifar", "tiny", "cuda", scheduler="tcp://127.0.0.1:1").outputs(out)
    assert out / "claims.csv" in files
    assert json.loads((out / "config.json").read_text())["device"] == "cuda"


def _cpus() -> int:
    """The CPUs this process may run on (what the Makefile counts)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


@pytest.mark.skipif(__import__("shutil").which("make") is None, reason="needs make")
@pytest.mark.parametrize("workers, expected", [(None, f"--workers {_cpus()}"),
                                               ("3", "--workers 3"), ("", None)])
def test_make_reproduce_runs_one_worker_per_core_unless_told(workers, expected):
    """``make reproduce`` hands the CPUs it may run on to ``--workers``; ``WORKERS=3``
    sets them; ``WORKERS=`` (empty) runs the serial reproduce, without ``--workers``. Read off
    ``make -n`` (nothing is run)."""
    import subprocess

    root = pathlib.Path(__file__).resolve().parents[3]
    # OMP_NUM_THREADS=1 (the tests' thread policy) must not make it one worker
    env = {k: v for k, v in os.environ.items()
           if k not in ("WORKERS", "PRESET")} | {"OMP_NUM_THREADS": "1"}
    args = ["make", "-n", "-C", str(root), "reproduce"]
    if workers is not None:
        args.append(f"WORKERS={workers}")
    lines = subprocess.run(args, env=env, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    (command,) = [line for line in lines if "sparselab reproduce" in line]
    assert "--preset quick" in command
    if expected is None:
        assert "--workers" not in command
    else:
        assert command.rstrip().endswith(expected)
