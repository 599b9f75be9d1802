"""``sparselab reproduce``: regenerate every figure and table of the papers into one folder.

Each step writes into its own sub-folder and, last, a ``done.json`` marker holding the step's
configuration; a rerun skips steps whose marker matches, so an interrupted run resumes without
losing finished work (``--force`` redoes everything).
"""

from __future__ import annotations

import json
import pathlib
import time
from dataclasses import asdict
from typing import Callable

import click

from experiments.gallery import GalleryConfig, write_target_gallery

PRESETS = ("quick", "full")


def steps(preset: str) -> list[tuple[str, dict, Callable[[pathlib.Path], list[pathlib.Path]]]]:
    """The steps of a preset: (name, configuration, function writing into a folder)."""
    gallery = GalleryConfig(n_seeds=10 if preset == "quick" else 50)
    return [
        ("targets", asdict(gallery), lambda out: write_target_gallery(out, gallery)),
    ]


def run_reproduce(preset: str, out: pathlib.Path, force: bool = False,
                  echo: Callable[[str], None] = print) -> dict[str, list[str]]:
    """Run (or resume) the steps of ``preset`` into ``out``.

    Returns:
        step name -> list of files it wrote (relative to ``out``).

    Raises:
        ValueError: an unknown preset.
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[str]] = {}
    for name, config, run in steps(preset):
        folder = out / name
        marker = folder / "done.json"
        record = {"config": json.loads(json.dumps(config))}
        if not force and marker.exists():
            previous = json.loads(marker.read_text())
            if previous.get("config") == record["config"]:
                echo(f"[{name}] already done, skipping (use --force to redo)")
                written[name] = previous["files"]
                continue
        echo(f"[{name}] running")
        start = time.perf_counter()
        files = [str(p.relative_to(out)) for p in run(folder)]
        record.update(files=files, seconds=round(time.perf_counter() - start, 2))
        marker.write_text(json.dumps(record, indent=2))
        written[name] = files
    (out / "index.json").write_text(json.dumps({"preset": preset, "steps": written}, indent=2))
    return written


@click.command()
@click.option("--preset", type=click.Choice(PRESETS), default="quick", show_default=True,
              help="quick: minutes on 2 CPU cores; full: the papers' sizes.")
@click.option("--out", type=click.Path(file_okay=False, path_type=pathlib.Path), default=None,
              help="Output folder [default: runs/<preset>].")
@click.option("--force", is_flag=True, help="Redo steps that are already done.")
def reproduce_command(preset: str, out: pathlib.Path | None, force: bool) -> None:
    """Reproduce the papers' figures and tables (resumable)."""
    out = out or pathlib.Path("runs") / preset
    written = run_reproduce(preset, out, force=force, echo=click.echo)
    for name, files in written.items():
        for f in files:
            click.echo(f"{name}: {out / f}")
