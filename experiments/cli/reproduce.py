"""``sparselab reproduce``: every figure, table and check into one folder, with report.md
(``experiments.pipeline.reproduce``)."""

from __future__ import annotations

import pathlib

import click

from experiments.cli.options import PresetChoice, engine_options, yes_option
from experiments.pipeline.reproduce import (
    REPRODUCE_PRESETS,
    estimate_reproduce,
    run_reproduce,
)
from experiments.runner.engine import engine_or_none


@click.command()
@click.option("--preset", type=PresetChoice(REPRODUCE_PRESETS), default="quick",
              show_default=True,
              help="tiny: a smoke test; quick: minutes on 2 CPU cores; paper: the papers' sizes "
                   "(its time estimate printed first; over an hour, it starts only with --yes).")
@click.option("--out", type=click.Path(file_okay=False, path_type=pathlib.Path), default=None,
              help="Output folder [default: runs/<preset>].")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True)
@click.option("--force", is_flag=True, help="Redo steps that are already done.")
@click.option("--estimate", is_flag=True,
              help="Print how long the run would take on this device (a calibration: about a "
                   "minute at quick; at paper, minutes on a GPU, about half an hour on one "
                   "CPU core, timed on the workers with --workers or --scheduler) and exit; "
                   "--preset paper prints it before starting anyway.")
@click.option("--only", default=None, metavar="STEP[,STEP...]",
              help="Run only these steps (e.g. fig2,checks): targets, sdm, checks, "
                   "comet_similarity, comet_utilisation, the scaling experiments and, at tiny "
                   "and quick, cifar, continual, comet_images. report.md keeps the other "
                   "steps already done in the folder and names the rest as not run.")
@yes_option
@engine_options
def reproduce_command(preset: str, out: pathlib.Path | None, device: str, force: bool,
                      estimate: bool, only: str | None, yes: bool, workers: int | None,
                      scheduler: str | None) -> None:
    """Reproduce the papers' figures and tables into one folder with report.md (resumable)."""
    out = out or pathlib.Path("runs") / preset
    try:
        if estimate:
            with engine_or_none(workers, scheduler, device) as engine:
                click.echo(estimate_reproduce(preset, out, force=force, device=device,
                                              workers=workers or 1, scheduler=scheduler,
                                              engine=engine, only=only).text())
            return
        written = run_reproduce(preset, out, force=force, device=device, echo=click.echo,
                                workers=workers, scheduler=scheduler, only=only, yes=yes)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"wrote {out / 'report.md'} ({sum(map(len, written.values()))} files)")
