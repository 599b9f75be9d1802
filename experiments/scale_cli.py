"""``sparselab scale``: run one scaling experiment and write its results folder.

    sparselab scale --experiment fig2 --preset quick --out runs/quick/fig2

writes ``results.csv`` (tidy, one row per model, configuration and seed), ``config.json``
(the configs, their settings fingerprints, seeds, package versions, device, git revision),
plots as PNG and SVG, ``fits.csv`` (every power- and offset-law fit), ``table.md`` and
``claims.csv``. Re-running skips the runs already in ``results.csv``; a folder whose rows were
made under other settings is refused (``--force`` starts it over).
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
from experiments.sweep import prepare_out, resolve_device, run_sweep, settings_fingerprint


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
                   progress: bool = True,
                   force: bool = False) -> tuple[list[pathlib.Path], list[Claim]]:
    """Run (or resume) experiment ``name`` at ``preset`` into ``out``; return files and claims.

    ``config.json`` is written once the folder has been checked and before the first row, so
    that it describes the rows of ``results.csv`` even when the sweep is interrupted.

    Arguments:
        name, preset: the experiment (``experiments.presets.EXPERIMENTS``) and its preset.
        out: the results folder, created if needed.
        device: "auto", "cpu" or "cuda".
        progress: show a progress bar.
        force: delete ``out/results.csv`` first and run every row anew (as
            ``sparselab reproduce --force`` does for its steps).

    Raises:
        ValueError: unknown experiment/preset, bad device, unwritable ``out``, or rows in
            ``out/results.csv`` made under other settings (without ``force``).
    """
    configs = experiment_configs(name, preset)
    torch_device = resolve_device(device)
    out = pathlib.Path(out)
    prepare_out(configs, out, force=force)
    config_path = out / "config.json"
    config_path.write_text(json.dumps(
        {"experiment": name, "preset": preset, "configs": [c.to_dict() for c in configs],
         "settings": [settings_fingerprint(c) for c in configs],
         **environment(torch_device)}, indent=2, default=str))
    frame = run_sweep(configs, out, device=device, progress=progress)
    paths, claims = write_experiment_outputs(name, configs, frame, out)
    return [out / "results.csv", config_path, *paths], claims


@click.command()
@click.option("--experiment", "name", type=click.Choice(sorted(EXPERIMENTS)), required=True,
              help="Which experiment of Baykal et al. 2022, §5.")
@click.option("--preset", type=click.Choice(PRESETS), default="quick", show_default=True,
              help="tiny: seconds (tests); quick: minutes on 2 CPU cores; paper: paper's sizes.")
@click.option("--out", type=click.Path(file_okay=False, path_type=pathlib.Path), default=None,
              help="Results folder [default: runs/<preset>/<experiment>, where "
                   "`sparselab reproduce` puts it].")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--force", is_flag=True,
              help="Start the folder's results over (delete its results.csv) instead of "
                   "resuming.")
def scale_command(name: str, preset: str, out: pathlib.Path | None, device: str,
                  force: bool) -> None:
    """Run a scaling experiment (Figures 2-4, Tables 1-2, subspace) and plot it."""
    # one folder per preset: a tiny run never lands in the folder of a quick one
    out = out or pathlib.Path("runs") / preset / name
    try:
        paths, claims = run_experiment(name, preset, out, device=device, force=force)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    for path in paths:
        click.echo(f"wrote {path}")
    for claim in claims:
        click.echo(f"[{claim.verdict}] {claim.claim}")
