"""One writer per output folder, whole-file writes, one-line errors."""

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

from experiments.runner import output_folder
from experiments.runner.output_folder import FolderBusy, OutputError, claim, release, writer
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.sweep import run_sweep

_HOLD = """
import sys, time
from experiments.runner import output_folder
output_folder.claim(sys.argv[1])
if len(sys.argv) > 2:  # a temporary file of a write it will never finish
    open(sys.argv[2], "w").write("half a ta")
print("held", flush=True)
time.sleep(120)
"""


def _holder_process(folder, *extra):
    """A process that claims ``folder`` and sleeps; returned once it holds it."""
    process = subprocess.Popen([sys.executable, "-c", _HOLD, str(folder), *map(str, extra)],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def _config(name="fig4", seeds=(0, 1)):
    models = (ModelSpec("dense", width=8, label="dense"),
              ModelSpec("dsm", width=16, k=4, label="DSM"))
    return ExperimentConfig(name=name, preset="tiny", target=TargetSpec("polynomial"),
                            models=models, seeds=seeds, n_train=300, n_eval=200)


def test_a_second_process_is_refused_at_once_naming_pid_and_host(tmp_path):
    process = _holder_process(tmp_path)
    try:
        start = time.perf_counter()
        with pytest.raises(FolderBusy) as error:
            claim(tmp_path)
        assert time.perf_counter() - start < 2.0  # at once, not after a timeout
        message = str(error.value)
        assert f"process {process.pid} on host {socket.gethostname()}" in message
        assert str(tmp_path) in message and "\n" not in message
        # a sweep into the held folder computes and writes nothing
        with pytest.raises(FolderBusy):
            run_sweep([_config()], tmp_path, device="cpu", progress=False)
        assert not (tmp_path / "results.csv").exists()
    finally:
        process.kill()
        process.wait()
    # its lock died with it: the folder is free again
    with writer(tmp_path):
        assert output_folder.holder(tmp_path)["pid"] == os.getpid()
    assert output_folder.holder(tmp_path) is None  # released: no record left


def test_a_dead_writers_lock_is_taken_over_and_its_temporary_files_removed(tmp_path):
    leftover = tmp_path / ".results.csv.dead.tmp"
    old_style = tmp_path / ".results-abc123.csv"  # what sparselab wrote before
    old_style.write_text("trunc")
    process = _holder_process(tmp_path, leftover)
    process.send_signal(signal.SIGKILL)  # no clean-up of any kind
    process.wait()
    record = output_folder.holder(tmp_path)
    assert record["pid"] == process.pid and record["alive"] is False  # stale record
    assert leftover.exists()
    with writer(tmp_path):
        now = json.loads((tmp_path / output_folder.HOLDER_NAME).read_text())
        assert now["pid"] == os.getpid() and now["took_over"]["pid"] == process.pid
        assert not leftover.exists() and not old_style.exists()


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    claim(tmp_path)
    claim(tmp_path)
    release(tmp_path)
    code = ("import sys\nfrom experiments.runner import output_folder\n"
            "try:\n    output_folder.claim(sys.argv[1])\nexcept output_folder.FolderBusy:\n"
            "    print('busy')\nelse:\n    print('free')\n")

    def other():
        return subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                              text=True, check=True).stdout.strip()

    assert other() == "busy"  # one claim left
    release(tmp_path)
    assert other() == "free"


def test_a_folder_of_another_experiment_is_refused_naming_it(tmp_path):
    from experiments.pipeline.scale import run_experiment

    run_sweep([_config(name="fig2", seeds=(0,))], tmp_path, device="cpu", progress=False)
    (tmp_path / "config.json").write_text('{"experiment": "fig2"}')
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    with pytest.raises(ValueError) as error:
        run_experiment("fig3", "tiny", tmp_path, device="cpu", progress=False)
    assert "2 rows of experiment 'fig2'" in str(error.value) and "fig3" in str(error.value)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    assert {k: v for k, v in after.items() if not k.startswith(".")} == \
        {k: v for k, v in before.items() if not k.startswith(".")}  # config.json kept


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640)])
def test_results_csv_is_created_with_the_umask_mode(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        run_sweep([_config(seeds=(0,))], tmp_path, device="cpu", progress=False)
        output_folder.write_text(tmp_path / "other.txt", "x")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "results.csv").st_mode & 0o777 == mode
    assert os.stat(tmp_path / "other.txt").st_mode & 0o777 == mode


def _temporaries(folder):
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")
            or p.name.startswith(".results-")]


def test_a_full_disk_is_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    config = _config()  # 4 rows
    writes = {"n": 0}
    real = output_folder._write_all

    def fill_the_disk(fd, data):  # the second write of results.csv fills the disk half way
        writes["n"] += data.startswith(b"experiment,")
        if writes["n"] == 2:
            real(fd, data[:len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(output_folder, "_write_all", fill_the_disk)
    with pytest.raises(OutputError) as error:
        run_sweep([config], tmp_path, device="cpu", progress=False)
    message = str(error.value)
    assert "\n" not in message and str(tmp_path / "results.csv") in message
    assert "disk is full" in message
    assert _temporaries(tmp_path) == []
    assert len(pd.read_csv(tmp_path / "results.csv")) == 1  # the first row, whole
    monkeypatch.setattr(output_folder, "_write_all", real)
    # space again: the resume finishes the rest
    assert len(run_sweep([config], tmp_path, device="cpu", progress=False)) == 4
    assert _temporaries(tmp_path) == []


def test_a_refused_permission_is_one_line_naming_the_path(tmp_path, monkeypatch):
    target = tmp_path / "results.csv"
    target.write_text("old")

    def read_only(tmp):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp))

    monkeypatch.setattr(output_folder, "_open_temp", read_only)
    with pytest.raises(OutputError) as error:
        output_folder.write_text(target, "new")
    message = str(error.value)
    assert message.startswith(f"cannot write {target}: permission denied")
    assert "\n" not in message and target.read_text() == "old"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_line(tmp_path):
    target = tmp_path / "results.csv"
    target.write_text("old")
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="permission denied"):
            output_folder.write_text(target, "new")
    finally:
        tmp_path.chmod(0o755)
    assert target.read_text() == "old" and _temporaries(tmp_path) == []


def test_a_failure_after_the_write_removes_the_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "table.csv"
    target.write_text("old")

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(output_folder.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        output_folder.write_text(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and _temporaries(tmp_path) == []
