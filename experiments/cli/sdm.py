"""``sparselab sdm``: SDM circle-intersection weighting curves (Bricken et al. 2023, App. A.7, Fig. 7).

``sparselab sdm curves --n 64 --d 5,11,15 --weighting binary,linear,exp --out DIR`` writes the
normalised circle intersection I(d_v) / I(0) against the Hamming distance d_v between query and
pattern for each radius and weighting, with the fitted softmax exponential overlaid:

    DIR/sdm_curves.csv          tidy: one row per (d, weighting, d_v)
    DIR/sdm_softmax_fits.csv    one row per (d, weighting): fitted β, intercept, R²
    DIR/sdm_curves.png          one panel per radius (Fig. 7)
    DIR/sdm_curves_config.json  the configuration, so the figure can be regenerated from DIR
    DIR/claims.csv              App. A.7's claim that the weightings differ negligibly, decided
                                on the curves against ``NEGLIGIBLE_BAND``, with its positive
                                control (``_weighting_claims``)
"""

from __future__ import annotations

import pathlib

import click

from experiments.cli.options import writable_folder
from experiments.papers.sdm_curves import (
    DEFAULT_BETA,
    curves_config,
    write_sdm_curves,
)

__all__ = ["sdm_command"]

def _split(value: str, cast, name: str):
    try:
        return tuple(cast(v.strip()) for v in value.split(",") if v.strip())
    except ValueError as err:
        raise click.BadParameter(f"expected a comma-separated list, got {value!r}", param_hint=name) from err


@click.group(name="sdm",
             short_help="SDM circle-intersection weighting curves (Bricken et al. 2023).")
def sdm_command() -> None:
    """Sparse Distributed Memory: circle-intersection weighting curves (Bricken et al. 2023,
    App. A.7)."""


@sdm_command.command("curves",
                     short_help="Normalised intersection vs d_v with the fitted softmax.")
@click.option("--n", "n", type=int, default=64, show_default=True, help="address length in bits")
@click.option("--d", "radii", default="5,11,15", show_default=True, help="Hamming radii, comma-separated")
@click.option("--weighting", "weightings", default="binary,linear,exp", show_default=True,
              help="weightings (binary, linear, exp), comma-separated")
@click.option("--beta", type=float, default=DEFAULT_BETA, show_default=True,
              help="decay per bit of the exponential weighting (Eq. 9)")
@click.option("--out", "out_dir", type=click.Path(path_type=pathlib.Path),
              default=pathlib.Path("runs/sdm"), show_default=True,
              help="output folder (the curves have no preset, so no runs/<preset>/ level)")
def curves_command(n, radii, weightings, beta, out_dir) -> None:
    """Write CSV and PNG of the normalised intersection vs d_v with the fitted softmax (Fig. 7)."""
    try:
        radii, weightings = _split(radii, int, "--d"), _split(weightings, str, "--weighting")
        curves_config(n, radii, weightings, beta)  # bad arguments first: they are usage errors
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    writable_folder(out_dir)
    try:
        paths = write_sdm_curves(out_dir, n, radii, weightings, beta)
    except OSError as error:
        raise click.ClickException(f"--out {out_dir}: {error}") from None
    for path in paths:
        click.echo(str(path))
