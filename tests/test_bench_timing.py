"""The benchmarks' interleaved timer: bursts of consecutive calls, the first of each apart."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
from _timing import time_interleaved  # noqa: E402 (the benchmarks' folder)


@pytest.mark.parametrize("burst", [1, 3])
def test_time_interleaved_runs_bursts_in_rounds(burst):
    order = []
    fns = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    result = time_interleaved(fns, repeats=2, burst=burst)
    warm_up = ["a", "a", "b", "b"]
    rounds = (["a"] * burst + ["b"] * burst) * 2
    assert order == warm_up + rounds
    for name in fns:
        assert set(result[name]) >= {"median_s", "min_s", "cpu_median_s", "cpu_min_s"}
        assert ("after_other_median_s" in result[name]) == (burst > 1)
        assert 0 <= result[name]["min_s"] <= result[name]["median_s"]


def test_time_interleaved_times_the_steady_calls_apart_from_the_first():
    """With bursts, the statistics exclude each burst's first call (timed apart)."""
    import time

    calls = {"n": 0}

    def slow_first_of_burst():
        calls["n"] += 1
        if calls["n"] > 2 and (calls["n"] - 3) % 3 == 0:  # first call of each burst of 3
            time.sleep(0.02)

    result = time_interleaved({"f": slow_first_of_burst}, repeats=3, burst=3)["f"]
    assert result["after_other_min_s"] >= 0.02 > result["median_s"]


@pytest.mark.parametrize("repeats, burst", [(0, 1), (1, 0)])
def test_time_interleaved_rejects_empty_counts(repeats, burst):
    with pytest.raises(ValueError, match="repeats and burst"):
        time_interleaved({"f": lambda: None}, repeats=repeats, burst=burst)


def test_router_bench_names_its_gather_based_routers_among_the_routers():
    from bench_routers import GATHER_BASED

    from experiments.papers.router_study import ROUTER_LABELS
    assert set(GATHER_BASED) == set(ROUTER_LABELS) - {"smear"}  # SMEAR's merge is dense


_FAULTS = """
import resource, sys, torch
sys.path.insert(0, {folder!r})
from _timing import steady_malloc
from bench_routers import _dense_step
torch.set_num_threads(1)
with steady_malloc({nbytes}) as fixed:
    step = _dense_step(256, torch.rand(1024, 8) * 2 - 1, torch.randn(1024), "cpu")
    for _ in range(3):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(30):
        step()
    print(fixed, (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 30)
"""


def _faults_per_step(nbytes: int) -> float:
    """Minor page faults per dense step of width 256 (the routers benchmark's baseline at
    a = 64), in a fresh process whose malloc thresholds steady_malloc(nbytes) fixed before
    the step was built: a fresh process, because what a process did before decides where
    glibc puts the next block (the reason steady_malloc exists)."""
    import subprocess
    folder = str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks")
    run = subprocess.run([sys.executable, "-c", _FAULTS.format(folder=folder, nbytes=nbytes)],
                         capture_output=True, text=True, check=True)
    fixed, faults = run.stdout.split()
    assert fixed == "True"
    return float(faults)


@pytest.mark.slow
@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc",
                    reason="the malloc thresholds are glibc's")
def test_steady_malloc_spares_a_dense_step_its_page_faults():
    """With glibc's mmap threshold fixed at its initial 128 KiB, the dense step's megabyte
    intermediates are mapped anew at every step and fault on each of their pages; with
    steady_malloc's 32 MB they come from the heap, reused, and fault far less."""
    # measured in fresh processes on the development VM: 1028 faults a step at 128 KiB
    # (4 blocks of 256 pages) in 8 of 8 runs; 0-26 at 32 MB. The thresholds were once
    # measured after leaving steady_malloc in the same process instead: its grown heap
    # served the blocks there on two CI runs (25.6 and 0 faults a step), so each setting
    # now gets its own process.
    mapped = _faults_per_step(128 << 10)
    steady = _faults_per_step(32 << 20)
    assert mapped >= 256, mapped  # at least one megabyte block mapped anew every step
    assert steady <= mapped / 4, (steady, mapped)


def test_machine_names_the_cpu_model_and_counts(tmp_path):
    import os
    import platform

    from _timing import machine

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\n"
                       "model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\n\n"
                       "processor\t: 1\nmodel name\t: something else\n")
    info = machine(cpuinfo)
    assert info["cpu_model"] == "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
    assert info["n_cpus"] == os.cpu_count() and 1 <= info["n_cpus_usable"] <= info["n_cpus"]
    assert info["platform"] == platform.platform()
    # no /proc/cpuinfo (macOS, Windows): platform.processor(), or None when that is empty
    assert machine(tmp_path / "missing")["cpu_model"] == (platform.processor() or None)


def test_router_bench_records_the_machine_and_cuda(tmp_path, monkeypatch):
    import json

    import torch

    import bench_routers
    monkeypatch.setattr(bench_routers, "step_rates", lambda device, repeats: {})
    bench_routers.main(tmp_path, quick=True)
    setup = json.loads((tmp_path / "routers.json").read_text())["setup"]
    assert setup["cuda_available"] == torch.cuda.is_available()
    assert (setup["cuda_device"] is None) == (not torch.cuda.is_available())
    assert {"cpu_model", "n_cpus", "n_cpus_usable", "platform"} <= set(setup)


def test_run_all_summary_records_the_machine(tmp_path):
    import json

    import run_all
    from _timing import machine
    run_all.run(tmp_path, only=["no such benchmark"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["machine"] == machine() and summary["benchmarks"] == {}
