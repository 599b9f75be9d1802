"""``sparselab comet``: the two COMET §5.1 studies (``experiments.papers.comet_studies``).

    sparselab comet similarity --preset quick      # into runs/quick/comet_similarity
    sparselab comet utilisation --preset quick --out DIR
"""

from __future__ import annotations

import pathlib

import click

from experiments.cli.options import default_out, preset_option, writable_folder

#: The studies, each run by ``experiments.papers.comet_studies.preset_<study>`` and
#: ``write_<study>`` (imported when the command runs: torch and scipy are slow to load).
STUDIES = ("similarity", "utilisation")


@click.command(short_help="COMET §5.1: mask similarity or never-active neurons.")
@click.argument("study", type=click.Choice(STUDIES))
@preset_option(help="tiny: seconds (tests); quick: about a minute on 2 CPU cores; paper: the "
                    "paper's scale.")
@click.option("--out", type=click.Path(path_type=pathlib.Path), default=None,
              help="Output folder [default: runs/<preset>/comet_<study>].")
def comet_command(study: str, preset: str, out: pathlib.Path | None) -> None:
    """COMET §5.1: mask overlap and activation similarity against input
    similarity with Spearman correlations (Fig. 2), or the never-active neurons on sparselab's
    inputs."""
    out = writable_folder(out or default_out(preset, f"comet_{study}"))
    from experiments.papers import comet_studies

    make_config = getattr(comet_studies, f"preset_{study}")
    write = getattr(comet_studies, f"write_{study}")
    try:
        paths = write(out, make_config(preset), progress=True)
    except (ValueError, OSError) as error:
        raise click.ClickException(str(error)) from None
    for path in paths:
        click.echo(f"wrote {path}")
