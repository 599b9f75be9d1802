"""``sparselab targets``: the target gallery (``experiments.analysis.gallery``)."""

from __future__ import annotations

import pathlib

import click

from experiments.analysis.gallery import GalleryConfig, write_target_gallery
from experiments.cli.options import default_out, preset_option, writable_folder


@click.command(short_help="The target gallery: 2-D slices and Lipschitz ratios.")
@preset_option(help="Seeds per family: tiny 2, quick 10, paper 50 (--n-seeds overrides).")
@click.option("--out", type=click.Path(path_type=pathlib.Path), default=None,
              help="Folder for the PNGs, CSV and config.json [default: runs/<preset>/targets].")
@click.option("--n-seeds", type=click.IntRange(1), default=None,
              help="Seeds per family in the Lipschitz-ratio plot [default: the preset's].")
@click.option("--n-inputs", type=click.IntRange(2, 16), default=8, show_default=True,
              help="Input dimension of every target.")
def targets_command(preset: str, out: pathlib.Path | None, n_seeds: int | None,
                    n_inputs: int) -> None:
    """Draw the target gallery: 2-D slices of each target family and the ratios of empirical
    to certified Lipschitz constants (all must be at most 1)."""
    out = writable_folder(out or default_out(preset, "targets"))
    changes = {"n_inputs": n_inputs} | ({} if n_seeds is None else {"n_seeds": n_seeds})
    config = GalleryConfig.preset(preset, **changes)
    try:
        paths = write_target_gallery(out, config)
    except OSError as error:
        raise click.ClickException(f"--out {out}: {error}") from None
    for path in paths:
        click.echo(f"wrote {path}")
