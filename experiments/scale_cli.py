"""``sparselab scale``: run one scaling experiment and write its results folder.

    sparselab scale --experiment fig2 --preset quick --out runs/fig2

writes ``results.csv`` (tidy, one row per model, configuration and seed), ``config.json``
(the configs, seeds, package versions, device, git revision), plots as PNG and SVG,
``table.md`` and ``claims.csv``. Re-running skips the runs already in ``results.csv``.
"""

from __future__ import annotations

import importlib.metadata
import json
import pathlib
import platform
import subprocess

import click

from experiments.presets import EXPERIMENTS, PRESETS, experiment_configs
from experiments.report import Claim, write_experiment_outputs
from experiments.sweep import resolve_device, run_sweep


def environment(device) -> dict:
    """Package versions, device, Python and the git revision (None outside a checkout)."""
    versions = {}
    for package in ("sparselab", "numpy", "scipy", "numba", "torch", "pandas"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:  # pragma: no cover
            versions[package] = None
    try:
        revision = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                  cwd=pathlib.Path(__file__).parent, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):  # pragma: no cover
        revision = ""
    return {"versions": versions, "device": str(device), "python": platform.python_version(),
            "git_revision": revision or None}


def run_experiment(name: str, preset: str, out: pathlib.Path, device: str = "auto",
                   progress: bool = True) -> tuple[list[pathlib.Path], list[Claim]]:
    """Run (or resume) experiment ``name`` at ``preset`` into ``out``; return files and claims.

    Raises:
        ValueError: unknown experiment/preset, bad device, unwritable ``out``.
    """
    configs = experiment_configs(name, preset)
    torch_device = resolve_device(device)
    frame = run_sweep(configs, out, device=device, progress=progress)
    config_path = pathlib.Path(out) / "config.json"
    config_path.write_text(json.dumps(
        {"experiment": name, "preset": preset, "configs": [c.to_dict() for c in configs],
         **environment(torch_device)}, indent=2, default=str))
    paths, claims = write_experiment_outputs(name, configs, frame, pathlib.Path(out))
    return [pathlib.Path(out) / "results.csv", config_path, *paths], claims


@click.command()
@click.option("--experiment", "name", type=click.Choice(sorted(EXPERIMENTS)), required=True,
              help="Which experiment of Baykal et al. 2022, §5.")
@click.option("--preset", type=click.Choice(PRESETS), default="quick", show_default=True,
              help="tiny: seconds (tests); quick: minutes on 2 CPU cores; paper: paper's sizes.")
@click.option("--out", type=click.Path(file_okay=False, path_type=pathlib.Path), default=None,
              help="Results folder [default: runs/<experiment>].")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
def scale_command(name: str, preset: str, out: pathlib.Path | None, device: str) -> None:
    """Run a scaling experiment (Figures 2-4, Tables 1-2, subspace) and plot it."""
    out = out or pathlib.Path("runs") / name
    try:
        paths, claims = run_experiment(name, preset, out, device=device)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    for path in paths:
        click.echo(f"wrote {path}")
    for claim in claims:
        click.echo(f"[{claim.verdict}] {claim.claim}")
