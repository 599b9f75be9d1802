"""``sparselab comet``: the two COMET §5.1 studies (``experiments.comet_studies``).

    sparselab comet similarity --preset quick --out runs/comet_similarity
    sparselab comet utilisation --preset quick --out runs/comet_utilisation
"""

from __future__ import annotations

import pathlib

import click

from experiments.comet_studies import (
    preset_similarity,
    preset_utilisation,
    write_similarity,
    write_utilisation,
)
from experiments.presets import PRESETS

STUDIES = {"similarity": (preset_similarity, write_similarity),
           "utilisation": (preset_utilisation, write_utilisation)}


@click.command()
@click.argument("study", type=click.Choice(sorted(STUDIES)))
@click.option("--preset", type=click.Choice(PRESETS), default="quick", show_default=True,
              help="tiny: seconds (tests); quick: about a minute on 2 CPU cores; paper: the "
                   "paper's scale.")
@click.option("--out", type=click.Path(file_okay=False, path_type=pathlib.Path), default=None,
              help="Output folder [default: runs/comet_<study>].")
def comet_command(study: str, preset: str, out: pathlib.Path | None) -> None:
    """COMET §5.1: mask similarity vs input similarity (Fig. 2), or never-active neurons."""
    make_config, write = STUDIES[study]
    out = out or pathlib.Path("runs") / f"comet_{study}"
    try:
        paths = write(out, make_config(preset), progress=True)
    except (ValueError, OSError) as error:
        raise click.ClickException(str(error)) from None
    for path in paths:
        click.echo(f"wrote {path}")
