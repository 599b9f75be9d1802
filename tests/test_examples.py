"""Every file in examples/ runs as a user would run it, with one thread, and prints what it
promises. A new example is picked up automatically; give it a line in ``EXPECTED``."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

#: Lines (regular expressions, matched against each line of stdout) an example must print.
EXPECTED = {
    "own_target.py": [r"^target bump: stated bound 2\.6, probe measured 1\.\d+ on \d+ points$",
                      r"^refused: lipschitz_bound=1 is below the Lipschitz constant measured",
                      r"^DSM, width 1024, k = 32 +eval nMSE = 0\.\d+$",
                      r"^dense, width 32 +eval nMSE = 0\.\d+$"],
    "classifier_with_layers.py": [r"^σ-MoE: 2 of 8 experts \(32 hidden units\) active",
                                  r"^test accuracy: 0\.(8\d|9\d)\d$"],
    "read_results.py": [r"^results\.csv: 12 rows of \d+ columns$",
                        r"^dsm +8 +0\.\d+ +0\.\d+ +0\.\d+ +2$",
                        r"^sizes won \(lower mean eval nMSE\): \{.+\}$"],
    "own_check.py": [r"^== sign_hash_collisions: underpowered \(tiny\) — tiny: smoke run",
                     r"^tiny: smoke run, decides nothing: 0 holds, 0 refuted"],
    "own_router.py": [r"^hash_moe ", r"^results: .*results\.csv$",
                      r"^hash_moe: final accuracy [01]\.\d+, forgetting .*of the ReLU MLP's"],
}
#: Examples that are not scripts, and the command that runs them ({path}, {tmp} filled in).
COMMANDS = {
    "own_check.py": ["-m", "experiments.cli", "check", "--module", "{path}", "--preset", "tiny",
                     "--out", "{tmp}"],
}


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_and_prints_what_it_promises(path, tmp_path):
    args = [a.format(path=path, tmp=tmp_path) for a in COMMANDS.get(path.name, [str(path)])]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    lines = result.stdout.splitlines()
    assert lines, f"{path.name} printed nothing"
    for pattern in EXPECTED.get(path.name, []):
        assert any(re.search(pattern, line) for line in lines), \
            f"{path.name}: no line matches {pattern!r} in:\n{result.stdout[-3000:]}"


def test_every_example_has_expected_lines():
    missing = [p.name for p in EXAMPLES if p.name not in EXPECTED]
    assert not missing, f"add the lines these examples must print to EXPECTED: {missing}"
