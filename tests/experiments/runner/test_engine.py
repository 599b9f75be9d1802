"""Sweeps on Dask workers: the same rows as the serial path, a user's own model kind
shipped to workers that never registered it, a worker killed mid-task, a driver killed."""

import os
import pathlib
import signal
import subprocess
import sys
import time

import click
import pandas as pd
import pytest
from click.testing import CliRunner

from experiments.runner.engine import check_engine_options, local_cluster
from experiments.cli.options import engine_options
from experiments.kinds.registry import (ModelKind, model_kind_names, register_model_kind,
                                     unregister_model_kind)
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.sweep import run_sweep
from experiments.runner.rows import ROW_KEY

distributed = pytest.importorskip("distributed")


class SlowConstantKind(ModelKind):
    """A user's own kind, registered in the driver only: predicts the training mean after
    ``options["sleep"]`` seconds (time for a worker to be killed mid-task)."""

    name = "test_engine_slow_constant"
    regimes = ("exact",)
    fields = ("options",)

    def build(self, spec, dim, seed, config):
        return {"mean": None}

    def fit(self, model, spec, config, X, y, regime, seed):
        time.sleep(spec.option("sleep", 0.0))
        model["mean"] = float(y.mean())
        return float(((y - model["mean"]) ** 2).mean())

    def evaluate(self, model, X, y):
        error = y - model["mean"]
        return {"mse": float((error ** 2).mean()), "linf": float(abs(error).max())}

    def describe(self, model, spec, X):
        return dict(width=None, k=None, buckets=None, nonempty_buckets=None,
                    activated_units=0, params=1, flops_paper=0, flops_true=0,
                    flops_cost_formula=None)


@pytest.fixture
def slow_kind():
    kind = register_model_kind(SlowConstantKind(), replace=True)
    yield kind
    unregister_model_kind(kind.name)


def _config(models=None, seeds=(0, 1), name="fig4"):
    models = models or (ModelSpec("dense", width=8, label="dense"),
                        ModelSpec("dsm", width=16, k=4, label="DSM"),
                        ModelSpec("comet", width=16, k=4, label="COMET"))
    return ExperimentConfig(name=name, preset="tiny", target=TargetSpec("polynomial"),
                            models=tuple(models), seeds=seeds, n_train=300, n_eval=200,
                            train_steps=20, train_batch=64)


def _slow_config(sleep, seeds=(0, 1, 2, 3)):
    models = tuple(ModelSpec(SlowConstantKind.name, options={"sleep": sleep, "i": i})
                   for i in range(2))
    return _config(models, seeds=seeds)


def _comparable(path):
    frame = pd.read_csv(path, dtype={"settings": str}).drop(columns=["wall_s"])
    return frame.sort_values(ROW_KEY).reset_index(drop=True)


@pytest.fixture(scope="module")
def cluster():
    """One local cluster of 2 single-threaded worker processes for the module's tests."""
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        yield cluster.scheduler_address, client


@pytest.mark.slow
def test_rows_are_the_same_serial_and_on_two_workers(tmp_path, cluster):
    address, client = cluster
    config = _config()
    run_sweep([config], tmp_path / "serial", device="cpu", progress=False)
    seen = []
    run_sweep([config], tmp_path / "two", device="cpu", progress=False, scheduler=address,
              on_row=seen.append)
    serial = _comparable(tmp_path / "serial" / "results.csv")
    assert len(serial) == 6 and len(seen) == 6
    pd.testing.assert_frame_equal(_comparable(tmp_path / "two" / "results.csv"), serial,
                                  check_exact=True)
    # the file lists the rows in the serial run's order, not as the workers finished them
    order = [pd.read_csv(tmp_path / run / "results.csv", dtype={"settings": str})[ROW_KEY]
             for run in ("serial", "two")]
    pd.testing.assert_frame_equal(order[1], order[0])
    # the workers ran one thread each
    threads = client.run(lambda: __import__("torch").get_num_threads())
    assert set(threads.values()) == {1}
    # and glibc's allocator as in a plain process: no trim threshold (which would turn off its
    # adaptive mmap threshold and page-fault every array over 128 KiB anew: engine.WORKER_CONFIG)
    trim = client.run(lambda: __import__("os").environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert set(trim.values()) == {os.environ.get("MALLOC_TRIM_THRESHOLD_")}


@pytest.mark.slow
def test_the_local_cluster_keeps_dasks_housekeeping_slow(cluster):
    # engine.WORKER_CONFIG: no stack profiler in the workers (it takes the task's GIL every
    # 10 ms), event-loop ticks, system and memory monitors at seconds, not 20-500 ms
    address, client = cluster

    def intervals(dask_worker=None, dask_scheduler=None):
        server = dask_worker if dask_worker is not None else dask_scheduler
        return {name: float(pc.callback_time) for name, pc in server.periodic_callbacks.items()}

    workers = client.run(intervals)
    assert len(workers) == 2
    for callbacks in [*workers.values(), client.run_on_scheduler(intervals)]:
        assert not any(name.startswith("profile") for name in callbacks)
        assert callbacks["tick"] == 1000.0 and callbacks["monitor"] == 5000.0
    assert all(callbacks["memory_monitor"] == 1000.0 for callbacks in workers.values())


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 4])
def test_rows_are_the_same_on_a_local_cluster_of_one_or_four_workers(tmp_path, workers):
    config = _config()
    run_sweep([config], tmp_path / "serial", device="cpu", progress=False)
    run_sweep([config], tmp_path / "local", device="cpu", progress=False, workers=workers)
    pd.testing.assert_frame_equal(_comparable(tmp_path / "local" / "results.csv"),
                                  _comparable(tmp_path / "serial" / "results.csv"),
                                  check_exact=True)


@pytest.mark.slow
def test_a_kind_registered_in_the_driver_only_runs_on_the_workers(tmp_path, cluster,
                                                                  slow_kind):
    address, client = cluster
    name = SlowConstantKind.name
    assert not any(client.run(lambda: name in model_kind_names()).values())  # not there yet
    frame = run_sweep([_slow_config(0.0, seeds=(0,))], tmp_path, device="cpu",
                      progress=False, scheduler=address)
    assert list(frame["model"]) == [name, name]
    # the workers that ran it have it now: it travelled with the tasks
    assert any(client.run(lambda: name in model_kind_names()).values())


@pytest.mark.slow
def test_a_worker_killed_mid_task_loses_and_duplicates_no_row(tmp_path, cluster, slow_kind):
    address, client = cluster
    config = _slow_config(0.4)  # 8 rows of 0.4 s on 2 workers
    before = client.run(os.getpid)
    killed = {}

    def kill_a_busy_worker(row):
        if killed:
            return
        busy = [w for w, keys in client.processing().items() if keys]
        assert busy, "no worker was computing a row"
        killed[busy[0]] = before[busy[0]]
        os.kill(before[busy[0]], signal.SIGKILL)

    frame = run_sweep([config], tmp_path, device="cpu", progress=False, scheduler=address,
                      on_row=kill_a_busy_worker)
    on_disk = pd.read_csv(tmp_path / "results.csv", dtype={"settings": str})
    assert len(frame) == len(on_disk) == 8
    assert not on_disk.duplicated(ROW_KEY).any()
    client.wait_for_workers(2, timeout=60)
    after = client.run(os.getpid)
    assert list(killed.values())[0] not in after.values()  # it did die; its nanny restarted it


_DRIVER = """
import sys
sys.path.insert(0, sys.argv[3])
from test_engine import SlowConstantKind, _slow_config
from experiments.kinds.registry import register_model_kind
from experiments.runner.sweep import run_sweep
register_model_kind(SlowConstantKind(), replace=True)
run_sweep([_slow_config(0.3)], sys.argv[1], device="cpu", progress=False, scheduler=sys.argv[2])
"""


@pytest.mark.slow
def test_a_killed_driver_resumes_with_the_rest(tmp_path, cluster, slow_kind):
    address, client = cluster
    out = tmp_path / "run"
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER, str(out), address,
                               os.path.dirname(__file__)])
    path = out / "results.csv"
    deadline = time.monotonic() + 120
    while not (path.exists() and len(pd.read_csv(path)) >= 2):
        assert driver.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    partial = len(pd.read_csv(path))
    assert 2 <= partial < 8
    computed = []
    run_sweep([_slow_config(0.3)], out, device="cpu", progress=False, scheduler=address,
              on_row=computed.append)
    assert len(computed) == 8 - partial  # only the rest was computed
    run_sweep([_slow_config(0.3)], tmp_path / "full", device="cpu", progress=False)
    pd.testing.assert_frame_equal(_comparable(path), _comparable(tmp_path / "full" /
                                                                 "results.csv"))


def test_engine_options_are_checked():
    for workers, scheduler, match in ((0, None, "workers must be an integer >= 1"),
                                      (2, "tcp://h:8786", "not both"),
                                      (None, " ", "scheduler must be")):
        with pytest.raises(ValueError, match=match):
            check_engine_options(workers, scheduler)
    with pytest.raises(ValueError, match="device must be one of"):
        check_engine_options(2, None, "tpu")

    @click.command()
    @engine_options
    def command(workers, scheduler):
        click.echo(f"{workers} {scheduler}")

    runner = CliRunner()
    assert runner.invoke(command, []).output.strip() == "None None"
    assert runner.invoke(command, ["--workers", "3"]).output.strip() == "3 None"
    assert runner.invoke(command, ["--scheduler", "tcp://h:1"]).output.strip() == \
        "None tcp://h:1"
    assert runner.invoke(command, ["--workers", "0"]).exit_code == 2


@pytest.mark.cuda
def test_each_local_worker_gets_one_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    config = _config(seeds=(0,))
    frame = run_sweep([config], tmp_path, device="cuda", progress=False, workers=2)
    assert len(frame) == 3
    assert set(frame.loc[frame["model"] == "comet", "device"].str[:4]) == {"cuda"}
    from experiments.runner.engine import Engine
    with Engine(workers=2, device="cuda") as engine:
        visible = engine.client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
    n = torch.cuda.device_count()
    assert sorted(visible.values()) == sorted(str(i % n) for i in range(2))


@pytest.mark.slow
def test_local_workers_share_the_visible_gpus_round_robin(monkeypatch):
    # the GPU choice without a GPU: the ids come from the driver's CUDA_VISIBLE_DEVICES,
    # which no CPU-only torch reads (the cuda test above runs the rows on real GPUs)
    from experiments.runner.engine import Engine, worker_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5,7")
    assert worker_gpus("auto") == worker_gpus("cuda") == ["3", "5", "7"]
    assert worker_gpus("cpu") == []

    def visible():
        return os.environ.get("CUDA_VISIBLE_DEVICES")

    with Engine(workers=2, device="auto") as engine:
        assert sorted(engine.client.run(visible).values()) == ["3", "5"]
    with Engine(workers=2, device="cpu") as engine:  # no GPU chosen: the driver's list
        assert sorted(engine.client.run(visible).values()) == ["3, 5,7", "3, 5,7"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2")
    with Engine(workers=2, device="auto") as engine:  # fewer GPUs than workers: shared
        assert sorted(engine.client.run(visible).values()) == ["2", "2"]


@pytest.mark.slow
def test_rows_and_tasks_carry_their_priority(cluster, slow_kind):
    from experiments.runner.engine import Engine

    address, client = cluster
    with Engine(scheduler=address) as engine:
        with pytest.raises(ValueError, match="priority must be an integer"):
            with engine.prioritised(1.5):
                pass
        seen = {}

        def priorities(dask_scheduler):
            return {key: ts.priority[0] for key, ts in dask_scheduler.tasks.items()
                    if str(key).startswith("sparselab-")}

        config = _slow_config(0.5, seeds=(0, 1))
        with engine.prioritised(7):
            rows = engine.rows([(config, spec, seed) for seed in config.seeds
                                for spec in config.models])
            next(rows)  # the first of 4 rows of 0.5 s on 2 workers: the others still held
            seen.update(client.run_on_scheduler(priorities))
            rows.close()
        task = engine.submit(sum, [1, 2], priority=3, name="step")
        assert task.result() == 3
        seen.update(client.run_on_scheduler(priorities))
    # Dask orders by -priority: a higher priority runs first
    assert {-p for key, p in seen.items() if key.startswith("sparselab-row-")} == {7}
    assert {-p for key, p in seen.items() if key.startswith("sparselab-step-")} == {3}


@pytest.mark.slow
def test_rows_finished_out_of_order_are_written_in_the_sweep_order(tmp_path, cluster,
                                                                   slow_kind):
    """The first row sleeps while the other worker finishes the rest: the workers finish the
    rows out of order, and results.csv still lists them as the serial sweep does."""
    address, _ = cluster
    models = tuple(ModelSpec(SlowConstantKind.name, options={"sleep": sleep, "i": i})
                   for i, sleep in enumerate((1.5, 0.0, 0.0, 0.0)))
    config = _config(models, seeds=(0,))
    finished = []
    run_sweep([config], tmp_path / "two", device="cpu", progress=False, scheduler=address,
              on_row=lambda row: finished.append(row["model_key"]))
    written = pd.read_csv(tmp_path / "two" / "results.csv")["model_key"].tolist()
    assert written == [spec.key() for spec in models]
    assert finished != written  # the case the order is restored for did happen


class LoggedConstantKind(SlowConstantKind):
    """``SlowConstantKind`` that appends a line to the file named by the environment variable
    ``SPARSELAB_TEST_ROW_LOG`` (where set: on the workers) for every row it computes."""

    name = "test_engine_logged_constant"

    def fit(self, model, spec, config, X, y, regime, seed):
        log = os.environ.get("SPARSELAB_TEST_ROW_LOG")
        if log:
            with open(log, "a") as file:
                file.write(f"{spec.key()} {seed}\n")
        return super().fit(model, spec, config, X, y, regime, seed)


@pytest.mark.slow
def test_rows_two_sweeps_share_are_computed_once(tmp_path, cluster):
    """Two sweeps at once on one engine (as ``sparselab reproduce --workers`` runs them) with
    a model in common: its rows are computed once, and each sweep's results.csv is the one
    its serial run writes (wall_s aside), with its own experiment, label and settings."""
    import threading

    from experiments.runner.engine import open_engine, row_identity
    from experiments.runner.rows import settings_fingerprint

    address, client = cluster
    kind = register_model_kind(LoggedConstantKind(), replace=True)
    log = tmp_path / "rows.log"
    try:
        spec = lambda i, label=None: ModelSpec(kind.name, label=label,  # noqa: E731
                                               options={"sleep": 0.3, "i": i})
        first = _config((spec(0, "shared in fig2"), spec(1)), name="fig2")
        second = _config((spec(0, "shared in fig4"), spec(2)), name="fig4")
        assert row_identity(first, first.models[0], 0) == row_identity(second,
                                                                       second.models[0], 0)
        assert row_identity(first, first.models[0], 0) != row_identity(first,
                                                                       first.models[0], 1)
        expected = sorted(f"{spec(i).key()} {seed}" for i in range(3) for seed in (0, 1))
        for config in (first, second):
            run_sweep([config], tmp_path / f"serial_{config.name}", device="cpu",
                      progress=False)
        client.run(lambda: os.environ.__setitem__("SPARSELAB_TEST_ROW_LOG", str(log)))
        with open_engine(scheduler=address, device="cpu"):
            threads = [threading.Thread(target=run_sweep, args=([config], tmp_path / config.name),
                                        kwargs=dict(device="cpu", progress=False,
                                                    scheduler=address))
                       for config in (first, second)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        client.run(lambda: os.environ.pop("SPARSELAB_TEST_ROW_LOG", None))
        unregister_model_kind(kind.name)
    computed = log.read_text().splitlines()
    # 3 models × 2 seeds: the shared model's 2 rows once, not twice
    assert sorted(computed) == expected
    for config in (first, second):
        parallel = _comparable(tmp_path / config.name / "results.csv")
        pd.testing.assert_frame_equal(parallel, _comparable(
            tmp_path / f"serial_{config.name}" / "results.csv"), check_exact=True)
        assert set(parallel["experiment"]) == {config.name}
        assert set(parallel["settings"]) == {settings_fingerprint(config)}
        assert set(parallel["model_label"]) == {m.display() for m in config.models}


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["scale", "--experiment", "fig2", "--preset", "tiny"],
    ["scale", "--experiment", "cifar", "--preset", "tiny", "--seeds", "0"],
    ["reproduce", "--preset", "tiny", "--only", "fig4"]])
def test_the_commands_run_on_an_existing_cluster_with_the_default_device(tmp_path, cluster,
                                                                          command):
    """``--scheduler`` as the README shows it, device left at "auto" (each worker resolves
    it; the driver may have no GPU): the run ends, and config.json says where the device was
    chosen. "auto" once reached ``torch.device`` in the driver and every such run failed."""
    import json

    from experiments.cli import main

    address, _ = cluster
    result = CliRunner().invoke(main, command + ["--scheduler", address, "--out",
                                                 str(tmp_path)])
    assert result.exit_code == 0, result.output
    config = next(tmp_path.rglob("config.json"))
    assert json.loads(config.read_text())["device"] == "auto (each worker's)"


def test_an_unreachable_scheduler_is_a_one_line_error(tmp_path, monkeypatch):
    import dask

    from experiments.cli import main

    monkeypatch.setitem(dask.config.config["distributed"]["comm"]["timeouts"], "connect", "1s")
    result = CliRunner().invoke(main, ["scale", "--experiment", "fig2", "--preset", "tiny",
                                       "--device", "cpu", "--scheduler", "tcp://127.0.0.1:1",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    last = result.output.strip().splitlines()[-1]  # after the progress bar's lines
    assert last.startswith("Error: scheduler 'tcp://127.0.0.1:1' cannot be reached: ")


def test_the_readmes_dask_configuration_file_is_the_local_clusters():
    # workers started by hand (README, "A cluster of several machines") get the same
    # configuration as the local cluster's: the file's keys and values, flattened, are
    # engine.WORKER_CONFIG's
    import re

    import dask
    import yaml

    from experiments.runner.engine import WORKER_CONFIG

    readme = (pathlib.Path(__file__).resolve().parents[3] / "README.md").read_text()
    block = re.search(r"sparselab\.yaml <<'EOF'\n(.*?)\nEOF\n", readme, re.S)
    assert block is not None, "the README's Dask configuration file is gone"

    def flat(tree, prefix=""):
        for key, value in tree.items():
            if isinstance(value, dict):
                yield from flat(value, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}", value

    from_readme = dict(flat(yaml.safe_load(block.group(1))))
    assert from_readme == WORKER_CONFIG
    # and Dask reads each key as the local cluster sets it
    with dask.config.set(from_readme):
        assert all(dask.config.get(key) == value for key, value in WORKER_CONFIG.items())
