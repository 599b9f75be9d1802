"""benchmarks/device_check.sh, the GPU check, run here without a GPU: its CUDA steps skipped
(DEVICE_CHECK_CPU_ONLY=1), its CPU steps at the tiny preset, its folder and summary read back."""

import csv
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "device_check.sh"
STEPS = ["cuda_tests", "bench", "sweep_cuda", "sweep_cpu", "image_cuda", "image_cpu",
         "estimate_cuda"]


def _run(folder, **env):
    return subprocess.run(["bash", str(SCRIPT), str(folder)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "DEVICE_CHECK_CPU_ONLY": "1", **env},
                          timeout=600)


def _summary(folder) -> dict[str, dict]:
    with open(folder / "summary.tsv") as f:
        return {row["step"]: row for row in csv.DictReader(f, delimiter="\t")}


def test_a_failing_step_never_stops_the_others_and_the_summary_says_which(tmp_path):
    """An interpreter that fails every command (``false``): each step runs, fails, and is
    recorded; the CUDA steps are skipped, the summary is written, the exit status is 1."""
    run = _run(tmp_path / "check", PYTHON="false")
    assert run.returncode == 1, run.stdout + run.stderr
    steps = _summary(tmp_path / "check")
    assert list(steps) == STEPS
    for name, row in steps.items():
        expected = "failed" if name.endswith("_cpu") else "skipped"
        assert row["status"] == expected, (name, row)
        assert (tmp_path / "check" / f"{name}.log").exists()
    text = (tmp_path / "check" / "summary.md").read_text()
    assert "| sweep_cpu | failed |" in text and "failures: 3" in text  # two steps, the ratios


def test_the_cuda_steps_fail_without_a_gpu_unless_skipped(tmp_path):
    """Without DEVICE_CHECK_CPU_ONLY on a machine without CUDA the CUDA steps fail (a GPU check
    that checked nothing is no pass); the CPU steps still run."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    run = _run(tmp_path, DEVICE_CHECK_CPU_ONLY="0", PYTHON="false")
    assert run.returncode == 1
    steps = _summary(tmp_path)
    assert {n for n, r in steps.items() if r["status"] == "failed"} == set(STEPS)
    assert "no CUDA device" in (tmp_path / "sweep_cuda.log").read_text()


@pytest.mark.slow
def test_the_cpu_steps_run_and_write_their_results(tmp_path):
    folder = tmp_path / "check"
    run = _run(folder, DEVICE_CHECK_PRESET="tiny", PYTHON=sys.executable)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    steps = _summary(folder)
    assert list(steps) == STEPS
    for name, row in steps.items():
        assert row["status"] == ("ok" if name.endswith("_cpu") else "skipped"), (name, row)
        assert int(row["limit_s"]) >= 1
    for part in ("sweep_cpu", "image_cpu"):
        with open(folder / part / "results.csv") as f:
            rows = list(csv.DictReader(f))
        assert rows and all(float(r["wall_s"]) >= 0 for r in rows)
        assert {r["device"] for r in rows} == {"cpu"}
    ratios = json.loads((folder / "ratios.json").read_text())
    for part in ("sweep", "image"):
        assert ratios[part]["rows_s_cpu"] > 0
        assert ratios[part]["rows_s_cuda"] is None and ratios[part]["rows_cpu_over_cuda"] is None
    machine = (folder / "machine.txt").read_text()
    assert "torch:" in machine and "gpu: none" in machine
    assert "failures: 0" in (folder / "summary.md").read_text()
