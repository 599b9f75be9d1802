"""The sparselab command line starts fast and speaks one language: --help imports no heavy
library, every command is listed with help that is not cut, presets and output folders are
the same everywhere, and an --out that cannot be written is a one-line error."""

import json
import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from experiments.cli import COMMANDS, main

HEAVY = ("torch", "numba", "scipy", "pandas", "matplotlib")
#: The command modules whose import must stay light (reproduce and scale import their
#: experiment configurations at module level).
LIGHT_MODULES = ("experiments.cli", "experiments.analysis.gallery", "experiments.cli.comet",
                 "experiments.cli.sdm", "experiments.cli.plot", "proofs_checks.cli")


def _python(code: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=_env())


def _sparselab(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd, env=_env())


def _env():
    import os

    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(_root())}


def _root():
    import pathlib

    return pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("module", LIGHT_MODULES)
def test_importing_a_command_module_loads_no_heavy_library(module):
    code = (f"import sys, {module}\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    result = _python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"{module} imports {result.stdout.strip()}"


def test_help_lists_every_command_without_loading_any():
    code = ("import sys\nfrom click.testing import CliRunner\nfrom experiments.cli import main\n"
            "out = CliRunner().invoke(main, ['--help']).output\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\nprint(out)")
    result = _python(code)
    assert result.returncode == 0, result.stderr
    loaded, _, text = result.stdout.partition("\n")
    assert loaded == "[]"
    listed = re.findall(r"^  (\w+)  +(.+)$", text.split("Commands:")[1], flags=re.M)
    assert [name for name, _ in listed] == sorted(COMMANDS)
    for name, line in listed:
        assert line == COMMANDS[name][2]


def _commands(group: click.Group, prefix=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def test_every_command_loads_and_its_help_is_not_cut():
    for path, command in _commands(main):
        assert isinstance(command, click.Command), path
        # the line a parent group shows: never cut mid-sentence or inside parentheses
        shown = COMMANDS[path[0]][2] if len(path) == 1 else command.get_short_help_str(45)
        assert not shown.endswith("..."), (path, shown)
        assert shown.count("(") == shown.count(")"), (path, shown)
        if len(path) == 1 and command.short_help:  # an explicit one matches the table
            assert command.short_help == COMMANDS[path[0]][2], path
        result = CliRunner().invoke(main, [*path, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, path


def test_usage_errors_are_fast_and_clear():
    result = _sparselab("bogus")
    assert result.returncode == 2 and "No such command 'bogus'" in result.stderr
    result = _sparselab("check", "--preset", "full", "--only", "no_such_check")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == "note: --preset full is now called --preset paper"
    assert "unknown check(s) 'no_such_check'" in result.stderr


def test_every_command_takes_the_same_presets():
    for path, command in _commands(main):
        options = {p.name: p for p in command.params}
        if "preset" in options:
            assert list(options["preset"].type.choices) == ["tiny", "quick", "paper"], path


def test_check_presets_map_to_the_checks_parameters():
    from proofs_checks.run import PARAMS_OF_PRESET, run_checks

    assert PARAMS_OF_PRESET == {"tiny": "tiny", "quick": "quick", "paper": "full",
                                "full": "full"}
    with pytest.raises(ValueError, match=r"preset must be one of \('tiny', 'quick', 'paper'\)"):
        run_checks("huge", None)


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a_file"
    path.write_text("not a folder")
    return path


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "results.csv").write_text("n,err,seed\n4,1.0,0\n8,0.5,0\n16,0.25,0\n")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ("targets", "--preset", "tiny", "--out", "{file}/sub"),
    ("targets", "--out", "{file}"),
    ("check", "--only", "simulations", "--out", "{file}/sub"),
    ("check", "--only", "simulations", "--out", "{tmp}/ok", "--json", "{file}/r.json"),
    ("sdm", "curves", "--out", "{file}/sub"),
    ("comet", "similarity", "--preset", "tiny", "--out", "{file}/sub"),
    ("plot", "{run}", "--x", "n", "--y", "err", "--out", "{file}/plot.png"),
    ("plot", "{run}", "--x", "n", "--y", "err", "--out", "{run}/taken.png"),
])
def test_an_out_that_cannot_be_written_is_one_line(args, a_file, run_dir, tmp_path):
    (run_dir / "taken.png").mkdir()  # a folder where the PNG should go: savefig fails
    args = [a.format(file=a_file, run=run_dir, tmp=tmp_path) for a in args]
    result = _sparselab(*args, cwd=tmp_path)
    assert result.returncode != 0
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    assert "Traceback" not in result.stderr
    assert a_file.name in lines[0] or "taken.png" in lines[0], lines[0]
    assert not (tmp_path / "ok" / "results.json").exists()  # failed before running a check


def test_default_output_layout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["targets", "--preset", "tiny", "--n-inputs", "3"])
    assert result.exit_code == 0, result.output
    config = json.loads((tmp_path / "runs" / "tiny" / "targets" / "config.json").read_text())
    assert config["n_seeds"] == 2 and config["n_inputs"] == 3  # the tiny preset's seeds
    result = CliRunner().invoke(main, ["targets", "--preset", "tiny", "--n-inputs", "3",
                                       "--n-seeds", "1"])
    config = json.loads((tmp_path / "runs" / "tiny" / "targets" / "config.json").read_text())
    assert result.exit_code == 0 and config["n_seeds"] == 1
