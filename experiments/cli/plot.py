"""``sparselab plot``: re-plot any ``results.csv`` of a sweep, one column against another.

    sparselab plot runs/quick/fig2 --x activated_units --y eval_nmse --by model_label

draws ``--y`` against ``--x`` on log-log axes, one line per value of ``--by``: at each x the
geometric mean over the group's rows there (the seeds, in a sweep's table) with an error bar
from their smallest to their largest value, and every row as a faint point. The figure is
written as PNG and SVG into RUN_DIR (``plot_<y>_vs_<x>[_by_<by>]``), to ``--out`` (a file
name), or inside ``--out`` under that name when it is an existing folder.
"""

from __future__ import annotations

import pathlib

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # pandas loads when a table is read, so that --help stays fast
    import pandas as pd

#: Suffixes ``--out`` may have: the figure is written in both formats, beside each other.
OUT_SUFFIXES = ("", ".png", ".svg")


def read_results(run_dir: pathlib.Path) -> pd.DataFrame:
    """``run_dir/results.csv`` as a DataFrame (settings fingerprints kept as strings).

    Raises:
        ValueError: ``run_dir`` missing or not a folder, or no readable, non-empty
            ``results.csv`` in it; one line, naming the path.
    """
    import pandas as pd

    run_dir = pathlib.Path(run_dir)
    if not run_dir.exists():
        raise ValueError(f"RUN_DIR {run_dir} does not exist")
    if not run_dir.is_dir():
        raise ValueError(f"RUN_DIR {run_dir} is not a folder: give the folder holding "
                         f"results.csv")
    path = run_dir / "results.csv"
    if not path.is_file():
        raise ValueError(f"{path} does not exist: RUN_DIR must hold a sweep's results.csv")
    try:
        from experiments.runner.rows import with_current_fits

        return with_current_fits(pd.read_csv(path, dtype={"settings": str}))
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a readable CSV table: "
                         f"{str(error).splitlines()[0]}") from None


def control_rows_of(run_dir: pathlib.Path, frame: pd.DataFrame):
    """Which rows of ``frame`` (``run_dir``'s results.csv) were run for the controls alone,
    as the ``config.json`` beside it records them: a sweep's rows at a config's control seeds
    (``experiments.runner.sweep.control_rows``); an image experiment's rows at its
    ``control_seeds``, and its reference's rows at a size for the controls the run lacks
    (``experiments.papers.real_data.CONTROL_SIZES``). None of them when there is no
    config.json or it records none.

    Arguments:
        run_dir: the folder of ``results.csv`` and ``config.json``.
        frame: its rows (``read_results``).

    Returns:
        bool array (len(frame),): True at the control rows.

    Raises:
        ValueError: a config.json that is no JSON object, whose sweep configs cannot be
            read back or whose control seeds are no list, naming the file
            (``--with-controls`` plots every row without reading it).
    """
    import json

    import numpy as np
    import pandas as pd

    mask = np.zeros(len(frame), dtype=bool)
    path = pathlib.Path(run_dir) / "config.json"
    if not path.is_file():
        return mask

    def unreadable(why: str) -> ValueError:
        return ValueError(f"{path} {why}: it tells which rows were run for the controls alone "
                          f"(--with-controls plots every row without reading it)")

    try:
        recorded = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise unreadable(f"cannot be read as JSON ({error})") from None
    if not isinstance(recorded, dict):
        raise unreadable(f"holds a {type(recorded).__name__}, not a JSON object")
    if "configs" in recorded and "target" in frame and "seed" in frame:
        from experiments.runner.specs import ExperimentConfig
        from experiments.runner.sweep import control_rows

        try:
            configs = [ExperimentConfig.from_dict(dict(c)) for c in recorded["configs"]]
        except (TypeError, ValueError, KeyError) as error:
            raise unreadable(f"has configs that cannot be read back ({error})") from None
        return control_rows(frame, configs)
    config = recorded.get("config")
    if not isinstance(config, dict) or "seed" not in frame:
        return mask
    control_seeds = config.get("control_seeds") or []
    if not isinstance(control_seeds, list):
        raise unreadable(f"records control_seeds {control_seeds!r}, not a list of seeds")
    mask |= pd.to_numeric(frame["seed"], errors="coerce").isin(control_seeds).to_numpy()
    from experiments.papers.real_data import CONTROL_REFERENCE, CONTROL_SIZES

    name = recorded.get("experiment")
    if name in CONTROL_SIZES and "model_label" in frame:
        column, run_field, control_field = CONTROL_SIZES[name]
        if config.get(control_field) and column in frame:
            mask |= ((frame["model_label"] == CONTROL_REFERENCE[name])
                     & ~frame[column].isin(config.get(run_field) or [])).to_numpy()
    return mask


def _check_column(frame: pd.DataFrame, column: str, option: str, path: pathlib.Path,
                  numeric: bool) -> None:
    import pandas as pd

    available = ", ".join(map(str, frame.columns))
    if column not in frame:
        hint = (" (written before rows carried normalised errors: resuming its sweep with "
                "`sparselab scale` fills them)" if column in ("eval_nmse", "train_nmse") else "")
        raise ValueError(f"{option} column {column!r} is not in {path}; available: "
                         f"{available}{hint}")
    if numeric and not pd.api.types.is_numeric_dtype(frame[column]):
        numeric_columns = ", ".join(c for c in frame.columns
                                    if pd.api.types.is_numeric_dtype(frame[c]))
        raise ValueError(f"{option} column {column!r} of {path} is not numeric; numeric "
                         f"columns: {numeric_columns}")


def output_paths(run_dir: pathlib.Path, x: str, y: str, by: str | None,
                 out: pathlib.Path | None = None) -> list[pathlib.Path]:
    """The PNG and SVG paths of a plot: ``out`` with each suffix; inside ``out`` under the
    default name when ``out`` is an existing folder (not named ``*.png`` / ``*.svg``); or
    ``run_dir/plot_<y>_vs_<x>[_by_<by>]`` (characters other than letters, digits, ``-`` and
    ``_`` in column names become ``_``).

    Raises:
        ValueError: ``out`` with a suffix other than ``OUT_SUFFIXES``, or in a missing folder.
        TypeError: ``x``, ``y`` not strings, ``by`` neither None nor a string.
    """
    for value, name in ((x, "x"), (y, "y")):
        if not isinstance(value, str) or not value:
            raise TypeError(f"{name} must be a column name (a non-empty string), got {value!r}")
    if by is not None and (not isinstance(by, str) or not by):
        raise TypeError(f"by must be None or a column name, got {by!r}")
    name = f"plot_{y}_vs_{x}" + (f"_by_{by}" if by else "")
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
    if out is None:
        stem = pathlib.Path(run_dir) / name
    elif pathlib.Path(out).is_dir() and pathlib.Path(out).suffix.lower() not in (".png",
                                                                                  ".svg"):
        stem = pathlib.Path(out) / name  # a folder: the plot goes inside it, not beside it
    else:
        out = pathlib.Path(out)
        if out.suffix.lower() not in OUT_SUFFIXES:
            raise ValueError(f"--out must end in .png or .svg (both are written), got {out}")
        if not out.parent.is_dir():
            raise ValueError(f"--out {out}: folder {out.parent} does not exist")
        stem = out.with_suffix("")
    return [stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")]


def plot_results(run_dir: pathlib.Path, x: str, y: str, by: str | None = "model_label",
                 out: pathlib.Path | None = None,
                 controls: bool = False) -> tuple[list[pathlib.Path], int]:
    """Plot column ``y`` of ``run_dir/results.csv`` against column ``x``, log-log, one line
    per value of ``by`` (one line for all rows when ``by`` is None or, when it is the default
    "model_label", the table has no such column).

    Rows sharing a group and an x value (the seeds of a sweep) are drawn as their geometric
    mean with an error bar from the smallest to the largest, each row as a faint point. Rows
    with a missing or non-positive x or y cannot sit on log axes and are left out (counted),
    and so are the rows run for the controls alone (``control_rows_of``) unless
    ``controls``: the reference model's extra seeds would weigh it apart from the others.

    Arguments:
        run_dir: folder holding ``results.csv``.
        x, y: numeric columns (any unit; axes are labelled with the column names).
        by: column whose values split the rows into lines, or None.
        out: where to write (``output_paths``), default a name in ``run_dir``.
        controls: plot the control rows too.

    Returns:
        ([PNG path, SVG path], number of rows left out: not plottable, or control rows).

    Raises:
        ValueError: a missing folder or file, a column not in the table (the message lists
            the available ones), a non-numeric x or y, a bad ``out``, or no plottable row.
    """
    import matplotlib
    import numpy as np
    import pandas as pd

    from routing.validation import check_bool

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = read_results(run_dir)
    path = pathlib.Path(run_dir) / "results.csv"
    if by == "model_label" and by not in frame:
        by = None
    _check_column(frame, x, "--x", path, numeric=True)
    _check_column(frame, y, "--y", path, numeric=True)
    if by is not None:
        _check_column(frame, by, "--by", path, numeric=False)
    paths = output_paths(run_dir, x, y, by, out)
    ok = (frame[x] > 0) & (frame[y] > 0)  # False for nan
    if not check_bool(controls, "controls"):
        ok &= ~control_rows_of(run_dir, frame)
    rows, dropped = frame[ok], int((~ok).sum())
    if rows.empty:
        raise ValueError(f"no row of {path} has positive {x} and {y} (log axes need both "
                         f"> 0) outside the control rows; {dropped} rows left out")
    groups = [(None, rows)] if by is None else list(rows.groupby(by, sort=False, dropna=False))
    fig, ax = plt.subplots(figsize=(6.4, 4.4), constrained_layout=True)
    for value, group in groups:
        stats = group.groupby(x)[y].agg(mean=lambda v: float(np.exp(np.mean(np.log(v)))),
                                        low="min", high="max")
        label = None if by is None else ("(none)" if pd.isna(value) else str(value))
        bars = ax.errorbar(stats.index, stats["mean"],
                           yerr=[stats["mean"] - stats["low"], stats["high"] - stats["mean"]],
                           marker="o", markersize=3, capsize=2, label=label)
        ax.plot(group[x], group[y], ".", markersize=2, alpha=0.35,
                color=bars.lines[0].get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"{y} vs {x}" + (f", by {by}" if by else "") + f" ({path.parent.name})",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    if by is not None:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    for target in paths:
        fig.savefig(target, dpi=110)
    plt.close(fig)
    return paths, dropped


@click.command(short_help="Re-plot any results.csv, one column against another.")
@click.argument("run_dir", type=click.Path(path_type=pathlib.Path))
@click.option("--x", "x", required=True, help="Column for the x axis (log scale).")
@click.option("--y", "y", required=True, help="Column for the y axis (log scale), e.g. eval_nmse.")
@click.option("--by", default="model_label", show_default=True,
              help="Column whose values get a line each; '' for one line of all rows "
                   "(the default is skipped when the table has no model_label).")
@click.option("--out", type=click.Path(path_type=pathlib.Path), default=None,
              help="File to write, .png or .svg; both are written. An existing folder: "
                   "both are written inside it under the default name [default: "
                   "RUN_DIR/plot_<y>_vs_<x>_by_<by>].")
@click.option("--with-controls", "controls", is_flag=True,
              help="Plot the rows run for the controls alone too (the reference model at "
                   "its control seeds, as config.json records them); left out by default.")
def plot_command(run_dir: pathlib.Path, x: str, y: str, by: str,
                 out: pathlib.Path | None, controls: bool) -> None:
    """Re-plot RUN_DIR/results.csv: --y against --x, log-log, one line per --by value (mean
    over seeds with min-max error bars; the controls' extra rows left out)."""
    try:
        paths, dropped = plot_results(run_dir, x, y, by=by or None, out=out,
                                      controls=controls)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    except OSError as error:  # a folder that cannot be written: one line, no traceback
        raise click.ClickException(f"--out {out or run_dir}: cannot write there "
                                   f"({error.strerror or error})") from None
    if dropped:
        click.echo(f"left out {dropped} rows with a missing or non-positive {x} or {y}, "
                   f"or run for the controls alone (--with-controls plots those)", err=True)
    for path in paths:
        click.echo(f"wrote {path}")
