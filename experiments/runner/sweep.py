"""Run a sweep: fit every model of an ``ExperimentConfig`` for every seed and collect a tidy,
resumable ``results.csv`` (one row per model, configuration and seed).

Resuming: a row is identified by (experiment, target, model_key, fit, seed, settings), where
``settings`` is a fingerprint of the config fields that change a row's numbers (data sizes,
noise, training and ridge settings, the target's seed: ``settings_fingerprint``). Rows already
in ``results.csv`` are skipped, and each new row is written atomically (the whole table goes to
a temporary file that replaces ``results.csv``: ``experiments.runner.output_folder``), so an
interrupted sweep loses no finished row. A folder whose rows of the same experiment and target
were made under other settings, or that holds another experiment's rows, is refused
(``check_results``) rather than mixed with the new rows; a folder another process is writing
is refused at once (``experiments.runner.output_folder.claim``).

Where rows are computed: one after another in this process (``workers`` and ``scheduler``
None), or on Dask workers (``experiments.runner.engine``): a local cluster of ``workers``
single-threaded processes, or the cluster whose scheduler is at ``scheduler``. Each row is a
function of (config, model spec, seed) alone (``compute_row``: the data are drawn again from
the seed), so the numbers are the same wherever it runs; only this process writes
``results.csv``, a row at a time as they complete.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import sys
from typing import Callable

import numpy as np
import pandas as pd
import torch

from experiments.runner import output_folder
from experiments.runner.rows import (
    COLUMNS,
    ROW_KEY,
    cached_data,
    compute_row,
    normalised_errors,
    resolve_device,
    resume_rows,
    settings_difference,
    settings_fingerprint,
    settings_of,
    with_current_fits,
)
from experiments.runner.specs import LEGACY_FIELDS, ExperimentConfig, fit_of
from routing.validation import check_bool, check_choice


def run_device(device: str, scheduler: str | None = None) -> torch.device | str:
    """The device a run's driver records (``config.json``) and hands to its rows: resolved
    here (``resolve_device``); or, for rows on an existing cluster (``scheduler`` given), the
    name as given, each worker resolving it (the GPUs are the workers'; the driver may have
    none, and ``experiments.runner.environment.environment`` records "auto" as "auto (each worker's)").

    Arguments:
        device: "auto", "cpu" or "cuda".
        scheduler: the cluster's address (``--scheduler``), or None for rows computed here or
            on a local cluster (whose workers see this machine's GPUs).

    Returns:
        a ``torch.device`` without ``scheduler``, else ``device`` itself.

    Raises:
        ValueError: ``device`` not one of "auto", "cpu", "cuda"; without ``scheduler``,
            "cuda" on a machine without CUDA (``resolve_device``).

    Source: README.md, "Many cores, many machines, GPUs" (``--scheduler`` an existing
    cluster, ``--device cuda`` on its workers).
    """
    if scheduler is None:
        return resolve_device(device)
    check_choice(device, "device", ("auto", "cpu", "cuda"))
    return device


def load_results(path: pathlib.Path) -> pd.DataFrame:
    """``results.csv`` as a DataFrame (empty with the right columns if missing); the
    ``settings`` fingerprints stay strings (an all-digit one would otherwise be read as a
    number), a legacy ``fit`` "sgd" is read under today's name (``with_current_fits``),
    and columns added since the file was written (``settings``,
    ``flops_cost_formula``, ``train_nmse``, ``eval_nmse``) are there, empty (nan). A resumed
    sweep fills the normalised errors of its own rows (``run_sweep``)."""
    path = pathlib.Path(path)
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    table = with_current_fits(pd.read_csv(path, dtype={"settings": str}))
    missing = [column for column in COLUMNS if column not in table]
    return table.assign(**{column: np.nan for column in missing})


def check_results(configs: list[ExperimentConfig], out: pathlib.Path,
                  table: pd.DataFrame | None = None) -> None:
    """Refuse to resume into ``out`` when its ``results.csv`` holds rows of one of
    ``configs``' (experiment, target) pairs made under other settings, or written before
    rows recorded their settings: those rows would be reused or mixed with the new ones.

    Arguments:
        configs: the sweep about to run.
        out: its output folder (``results.csv`` and, if present, ``config.json`` are read).
        table: ``results.csv`` already loaded (read from ``out`` when None).

    Also refuses a folder holding rows of an experiment that is none of ``configs``' names
    (a fig3 run into a fig2 folder), naming it.

    Raises:
        ValueError: naming ``results.csv``, the other experiment or the settings that differ
            where ``config.json`` tells them, and the way out (a new ``--out`` or ``--force``).
    """
    out = pathlib.Path(out)
    path = out / "results.csv"
    table = load_results(path) if table is None else table
    if not len(table):
        return
    names = {config.name for config in configs}
    others = table.loc[~table["experiment"].astype(str).isin(names), "experiment"]
    if len(others):
        counts = others.astype(str).value_counts()
        found = ", ".join(f"{n} rows of experiment {name!r}" for name, n in counts.items())
        raise ValueError(f"{path} holds {found}, not this run's experiment "
                         f"{' / '.join(sorted(map(repr, names)))}; one folder holds one "
                         f"experiment. Write to a new --out folder, or pass --force to start "
                         f"this folder's results over.")
    expected: dict[tuple[str, str], set[str]] = {}
    for config in configs:
        expected.setdefault((config.name, config.target.label()), set()).add(
            settings_fingerprint(config))
    settings = table["settings"].astype(object) if "settings" in table else np.nan
    bad = []
    for (name, target, found), rows in table.assign(settings=settings).groupby(
            ["experiment", "target", "settings"], dropna=False, sort=False):
        wanted = expected.get((str(name), str(target)))
        if wanted is not None and (not isinstance(found, str) or found not in wanted):
            bad.append((str(name), str(target), found if isinstance(found, str) else None,
                        len(rows)))
    if not bad:
        return
    name, target, found, n_rows = bad[0]
    config = next(c for c in configs if (c.name, c.target.label()) == (name, target))
    what = (f"{n_rows} rows of experiment {name!r}, target {target}, "
            + (f"made under other settings (fingerprint {found}, this run's "
               f"{settings_fingerprint(config)})" if found else
               "written before rows recorded their settings"))
    more = (f" (and {sum(n for *_, n in bad[1:])} more rows of other targets or settings)"
            if len(bad) > 1 else "")
    raise ValueError(f"{path} holds {what}{more}; resuming would reuse them as this run's. "
                     f"{_settings_difference(out / 'config.json', config, found)}"
                     f"Write to a new --out folder, or pass --force to start this folder's "
                     f"results over.")


def _settings_difference(config_path: pathlib.Path, config: ExperimentConfig,
                         found: str | None) -> str:
    """Which settings differ, from ``config.json`` where it can be matched to the rows: by
    fingerprint, or for rows without one (older sweeps wrote config.json when they finished)
    by experiment and target."""
    try:
        recorded = json.loads(config_path.read_text())["configs"]
        candidates = [c for c in recorded if c["name"] == config.name]
    except (OSError, ValueError, KeyError, TypeError):
        return "(No readable config.json tells which settings differ.) "
    if found is not None:
        match = [c for c in candidates if settings_fingerprint(c) == found]
        source = "config.json"
    else:
        current = settings_of(config)["target"]
        match = [c for c in candidates if settings_of(c).get("target") == current]
        source = "config.json (written when that sweep finished)"
    if not match:
        return f"(The {config_path.name} beside it does not describe those rows.) "
    # the fingerprint's old spellings (sgd_*) named as the fields are called today
    old, new = ({LEGACY_FIELDS.get(key, key): value for key, value in settings_of(c).items()}
                for c in (match[0], config))
    changed = settings_difference(old, new)
    if not changed:
        return f"{source} records this run's settings, but the rows cannot be checked. "
    return f"Settings that differ, by {source}: {'; '.join(changed)}. "


def _write_atomically(frame: pd.DataFrame, path: pathlib.Path) -> None:
    output_folder.write_frame(frame, path)


def prepare_out(configs: list[ExperimentConfig], out: pathlib.Path,
                force: bool = False) -> pd.DataFrame:
    """Make ``out`` ready for the sweep ``configs``: create it, check it is writable and no
    other process is writing it (``experiments.runner.output_folder.claim``), delete its
    ``results.csv`` when ``force``, and refuse rows of another experiment or made under other
    settings (``check_results``). Returns the rows already there.

    The folder is claimed for the check and released after it, unless the caller holds it
    already (``with experiments.runner.output_folder.writer(out):``), in which case it stays the
    caller's.

    Raises:
        ValueError: unwritable ``out``; ``output_folder.FolderBusy`` (a ValueError) when
            another process writes ``out``, naming its PID and host; rows of another
            experiment or made under other settings (see ``check_results``); ``force`` not a
            bool.
    """
    force = check_bool(force, "force")
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is not writable: it is a file, not a folder")
    try:  # the claim's lock lives in the folder: it must exist first
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--out {out} is not writable: {error}") from None
    with output_folder.writer(out):
        output_folder.prepare_folder(out, force=force)  # writable; results.csv gone on force
        table = load_results(out / "results.csv")
        check_results(configs, out, table)
    return table


def run_sweep(configs: list[ExperimentConfig], out: pathlib.Path, device: str = "auto",
              progress: bool = True, on_row: Callable[[dict], None] | None = None,
              force: bool = False, workers: int | None = None,
              scheduler: str | None = None) -> pd.DataFrame:
    """Run every (config, seed, model) not yet in ``out/results.csv``; return the rows of this
    sweep (rows of models no longer in ``configs`` stay in the file but are left out).

    Arguments:
        configs: the sweep (one experiment may have several configs, e.g. one per k):
            each config's models at its seeds, and its control models at its control
            seeds (``ExperimentConfig.jobs``).
        out: output folder, created if needed; this process is its only writer for the
            sweep (``experiments.runner.output_folder``).
        device: "auto", "cpu" or "cuda" (on Dask workers: each worker's own device; with
            ``workers``, "cuda" gives each worker one GPU).
        progress: show a progress bar (rows done over rows of the sweep, across workers).
        on_row: called with each new row, once written (tests use it to simulate an
            interruption).
        force: delete ``out/results.csv`` first and run every row anew.
        workers: compute the rows on a local Dask cluster of this many single-threaded
            worker processes (``experiments.runner.engine``); None (and no ``scheduler``): one after
            another in this process, with one thread (``experiments.runner.threads``).
        scheduler: address of a running Dask scheduler ("tcp://host:8786") whose workers
            compute the rows; exclusive with ``workers``.

    Rows of this sweep read from a ``results.csv`` written before rows carried ``train_nmse``
    and ``eval_nmse`` get them on resuming, from the labels drawn again: the data are a
    function of the settings the row's fingerprint checks and of its seed, so the
    variances are those the MSEs were computed on, and no model is refitted. Rows of models
    no longer in ``configs`` keep nan there.

    Raises:
        ValueError: bad device, workers or scheduler; unwritable ``out`` or one another
            process is writing (``output_folder.FolderBusy``); rows in ``out/results.csv`` of
            another experiment or made under other settings (``check_results``); a model that
            does not fit in memory; a full disk or a refused write
            (``output_folder.OutputError``, one line naming the file); a Dask scheduler
            at ``scheduler`` that cannot be reached (``experiments.runner.engine.Engine.start``).
    """
    progress = check_bool(progress, "progress")
    force = check_bool(force, "force")
    use_engine = workers is not None or scheduler is not None
    if use_engine:
        from experiments.runner.engine import check_engine_options
        check_engine_options(workers, scheduler, device)
        torch_device = None
    else:
        torch_device = resolve_device(device)
    out = pathlib.Path(out)
    with output_folder.writer(out):
        table = prepare_out(configs, out, force=force)
        path = out / "results.csv"
        rows = table.to_dict("records")
        # rows written before the normalised errors existed: filled from their own labels
        unnormalised = {tuple(map(str, (row[c] for c in ROW_KEY))): i
                        for i, row in enumerate(rows)
                        if pd.isna(row.get("eval_nmse")) or pd.isna(row.get("train_nmse"))}
        jobs, filled = [], False
        for config in configs:
            settings = settings_fingerprint(config)
            for seed, spec in config.jobs():  # the control seeds' reference models last
                key = (config.name, config.target.label(), spec.key(), fit_of(spec, config),
                       seed, settings)
                jobs.append((key, (config, spec, seed)))
                at = unnormalised.pop(tuple(map(str, key)), None)
                if at is not None:
                    old = rows[at]
                    X, y, X_eval, y_eval = cached_data(config, seed)
                    old.update(normalised_errors(old["train_mse"], old["eval_mse"], y,
                                                 y_eval))
                    filled = True
        table = pd.DataFrame(rows, columns=COLUMNS)
        done = set(map(tuple, table[ROW_KEY].astype(str).to_numpy())) if len(table) else set()
        keys = {tuple(map(str, key)) for key, _ in jobs}
        kept = [len(keys & done)]  # this sweep's rows in results.csv

        def count(row):
            kept[0] += 1
            if on_row is not None:
                on_row(row)

        def parallel(tasks):
            from experiments.runner.engine import open_engine
            with open_engine(workers=workers, scheduler=scheduler, device=device) as engine:
                yield from engine.rows(tasks)

        with _say_kept_on_interrupt(kept, len(keys), path):
            if filled:  # new rows' writes would hold them too; this covers a sweep without any
                _write_atomically(table, path)
            return resume_rows(
                path, table, jobs,
                compute=lambda task: compute_row(task[0], task[1], task[2], torch_device),
                key_columns=ROW_KEY, parallel=parallel if use_engine else None,
                columns=COLUMNS, progress=progress,
                desc=configs[0].name if configs else "sweep", on_row=count)


def control_rows(frame: pd.DataFrame, configs: list[ExperimentConfig]) -> np.ndarray:
    """Which rows of ``frame`` were run at a control seed (``ExperimentConfig.control_seeds``):
    a row whose target is a config's and whose seed is one of that config's control seeds
    (never one of its run seeds: the two are disjoint).

    Arguments:
        frame: results rows with ``target`` and ``seed`` columns (``run_sweep``'s, or
            ``results.csv`` read back: seeds compared as integers).
        configs: the experiment's configs (empty: no row is a control row).

    Returns:
        bool array (len(frame),): True at the control rows.

    Raises:
        ValueError: ``frame`` lacks ``target`` or ``seed`` while a config has control seeds.
    """
    mask = np.zeros(len(frame), dtype=bool)
    for config in configs:
        if not config.control_seeds:
            continue
        missing = [c for c in ("target", "seed") if c not in frame]
        if missing:
            raise ValueError(f"frame must have columns target and seed to tell the control "
                             f"rows, lacks {missing}")
        seeds = pd.to_numeric(frame["seed"], errors="coerce")
        mask |= ((frame["target"].astype(str) == config.target.label())
                 & seeds.isin(config.control_seeds)).to_numpy()
    return mask


def run_rows(frame: pd.DataFrame, configs: list[ExperimentConfig]) -> pd.DataFrame:
    """``frame`` without its control rows (``control_rows``): the rows at the run's seeds,
    on which an experiment's claims, fits, plots and tables are computed (only its controls
    read the control seeds). Same columns; the index is kept."""
    mask = control_rows(frame, configs)
    return frame[~mask] if mask.any() else frame


@contextlib.contextmanager
def _say_kept_on_interrupt(kept: list[int], total: int, path: pathlib.Path):
    """On Ctrl-C (``KeyboardInterrupt``) inside: print to stderr how many of the sweep's
    ``total`` rows ``path`` keeps (``kept[0]``, counted as rows are written) and that
    rerunning the same command resumes from them, then let the interrupt go on."""
    try:
        yield
    except KeyboardInterrupt:
        print(f"\ninterrupted: {kept[0]} of {total} rows are kept in {path}; rerun the same "
              f"command to resume (the rows kept are not computed again)", file=sys.stderr,
              flush=True)
        raise


