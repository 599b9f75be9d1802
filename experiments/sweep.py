"""Run a sweep: fit every model of an ``ExperimentConfig`` for every seed and collect a tidy,
resumable ``results.csv`` (one row per model, configuration and seed).

Resuming: a row is identified by (experiment, target, model_key, fit, seed, settings), where
``settings`` is a fingerprint of the config fields that change a row's numbers (data sizes,
noise, training and ridge settings, the target's seed: ``settings_fingerprint``). Rows already
in ``results.csv`` are skipped, and each new row is written atomically (the whole table goes to
a temporary file that replaces ``results.csv``: ``experiments.output_folder``), so an
interrupted sweep loses no finished row. A folder whose rows of the same experiment and target
were made under other settings, or that holds another experiment's rows, is refused
(``check_results``) rather than mixed with the new rows; a folder another process is writing
is refused at once (``experiments.output_folder.claim``).

Where rows are computed: one after another in this process (``workers`` and ``scheduler``
None), or on Dask workers (``experiments.engine``): a local cluster of ``workers``
single-threaded processes, or the cluster whose scheduler is at ``scheduler``. Each row is a
function of (config, model spec, seed) alone (``compute_row``: the data are drawn again from
the seed), so the numbers are the same wherever it runs; only this process writes
``results.csv``, a row at a time as they complete.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import math
import pathlib
import sys
from typing import Callable

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from experiments import output_folder
from experiments.model_kinds import model_kind
from experiments.specs import ExperimentConfig, ModelSpec, fit_of
from experiments.threads import single_threaded
from routing.validation import (as_numpy, check_bool, check_choice, check_points, check_real,
                                check_seed)

COLUMNS = ["experiment", "target", "model", "model_label", "model_key", "width", "k", "buckets",
           "nonempty_buckets", "activated_units", "params", "flops_paper", "flops_true",
           "flops_cost_formula", "fit", "train_mse", "eval_mse", "train_nmse", "eval_nmse",
           "linf_error", "seed", "settings", "device", "wall_s", "dead_fraction", "usage_cv"]
ROW_KEY = ["experiment", "target", "model_key", "fit", "seed", "settings"]

#: ExperimentConfig fields that are not settings: the row key holds them already (name; the
#: target's label, and the models and seeds row by row; the fit as ``fit_of``), or they
#: change no number (preset, panels, the fits' window). Every other field, including any
#: added later, is part of the fingerprint, so a new field can make a folder refuse to resume
#: but never silently reuse rows.
NOT_SETTINGS = ("name", "preset", "models", "seeds", "fit", "panels", "fit_window")
#: TargetSpec fields added after fingerprints existed: part of the settings only when set.
TARGET_FIELDS_ADDED = ("path", "sha256")

def resolve_device(device: str) -> torch.device:
    """"auto" → CUDA when available, else CPU; "cuda" without CUDA is an error.

    Raises:
        ValueError: unknown device name, or "cuda" requested on a machine without CUDA.
    """
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device must be one of auto, cpu, cuda, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but torch.cuda.is_available() is False")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def run_device(device: str, scheduler: str | None = None) -> torch.device | str:
    """The device a run's driver records (``config.json``) and hands to its rows: resolved
    here (``resolve_device``); or, for rows on an existing cluster (``scheduler`` given), the
    name as given, each worker resolving it (the GPUs are the workers'; the driver may have
    none, and ``experiments.scale_cli.environment`` records "auto" as "auto (each worker's)").

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


def normalised_errors(train_mse: float, eval_mse: float, y_train, y_eval) -> dict[str, float]:
    """The normalised errors of a row: ``train_nmse`` = train MSE / Var(y_train) and
    ``eval_nmse`` = eval MSE / Var(y_eval), each variance the population variance (ddof = 0)
    of the labels its MSE was computed on (noisy training labels included). 1 is the error of
    predicting the labels' mean, so errors of targets of any scale compare (Baykal
    et al. 2022 report raw MSEs of targets whose scale we cannot match).

    Arguments:
        train_mse, eval_mse: mean squared errors, in the labels' unit squared.
        y_train, y_eval: (N,) and (M,) labels, any real dtype (computed in float64).

    Returns:
        {"train_nmse": float, "eval_nmse": float}, dimensionless; nan where the labels are
        constant (Var = 0: the ratio is undefined).

    Raises:
        ValueError: empty labels; labels not a finite real (N,) vector; an MSE not a finite
            real >= 0.
    """
    result = {}
    for name, mse, labels, label_name in (
            ("train_nmse", train_mse, y_train, "y_train"),
            ("eval_nmse", eval_mse, y_eval, "y_eval")):
        mse = check_real(mse, name.replace("nmse", "mse"), 0.0)
        labels = as_numpy(labels)
        if labels.ndim != 1:
            raise ValueError(f"{label_name} must be a vector (N,), got shape {labels.shape}")
        labels = check_points(labels[:, None], 1, label_name)[:, 0]
        if labels.size == 0:
            raise ValueError(f"{name} needs at least one label, got an empty array")
        variance = float(np.var(labels))
        result[name] = float(mse) / variance if variance > 0 else float("nan")
    return result


def run_model(spec: ModelSpec, config: ExperimentConfig, data, seed: int,
              device: torch.device) -> dict:
    """Fit one model on ``data = (X, y, X_eval, y_eval)`` and measure it: a results row, with
    the raw errors and the normalised ones (``normalised_errors``). What is built and how it
    is fitted and measured is its kind's (``experiments.model_kinds.model_kind(spec.kind)``).

    Raises:
        ValueError: from the kind (a model that does not fit in memory, bad data).
    """
    X, y, X_eval, y_eval = data
    row = model_kind(spec.kind).run(spec, config, data, seed, device)
    row.update(normalised_errors(row["train_mse"], row["eval_mse"], y, y_eval))
    row.update(model=spec.kind, model_label=spec.display(), model_key=spec.key(),
               fit=fit_of(spec, config), seed=seed)
    return row


def settings_of(config: ExperimentConfig | dict) -> dict:
    """The settings of a config (an ``ExperimentConfig`` or its ``to_dict()``, e.g. read back
    from ``config.json``): every field but ``NOT_SETTINGS``, as plain JSON values.

    Raises:
        TypeError: ``config`` is neither an ``ExperimentConfig`` nor a dict.
    """
    if not isinstance(config, (ExperimentConfig, dict)):
        raise TypeError(f"config must be an ExperimentConfig or its to_dict(), got "
                        f"{type(config).__name__}")
    data = config.to_dict() if isinstance(config, ExperimentConfig) else dict(config)
    settings = {name: value for name, value in data.items() if name not in NOT_SETTINGS}
    if isinstance(settings.get("target"), dict):
        # fields a target gained later (a data file's path and hash) count only when set, so
        # that every folder written before them keeps its fingerprint
        settings["target"] = {key: value for key, value in settings["target"].items()
                              if value is not None or key not in TARGET_FIELDS_ADDED}
    return _canonical(settings)


def _canonical(value):
    # Numbers become floats so that 0 and 0.0 (a config written by hand, or read back from
    # JSON) give one fingerprint; float repr is the shortest round-trip form on every
    # Python 3, so the JSON text below does not depend on the Python version.
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    return str(value)


def settings_fingerprint(config: ExperimentConfig | dict) -> str:
    """A 12-hex-digit fingerprint of ``settings_of(config)``: sha256 of its canonical JSON
    (sorted keys, no spaces), the same in every process and Python version.

    Arguments:
        config: an ``ExperimentConfig`` or its ``to_dict()``.

    Returns:
        str, e.g. "3f2a9c0b41de".

    An ``ExperimentConfig`` (frozen) keeps its fingerprint after the first call: the engine
    asks for it for every row, and a config of 58 models takes about 1.4 ms to serialise.
    """
    kept = getattr(config, "_settings_fingerprint", None)
    if kept is not None:
        return kept
    text = json.dumps(settings_of(config), sort_keys=True, separators=(",", ":"),
                      allow_nan=True)
    fingerprint = hashlib.sha256(text.encode()).hexdigest()[:12]
    if isinstance(config, ExperimentConfig):
        object.__setattr__(config, "_settings_fingerprint", fingerprint)
    return fingerprint


def load_results(path: pathlib.Path) -> pd.DataFrame:
    """``results.csv`` as a DataFrame (empty with the right columns if missing); the
    ``settings`` fingerprints stay strings (an all-digit one would otherwise be read as a
    number), and columns added since the file was written (``settings``,
    ``flops_cost_formula``, ``train_nmse``, ``eval_nmse``) are there, empty (nan). A resumed
    sweep fills the normalised errors of its own rows (``run_sweep``)."""
    path = pathlib.Path(path)
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    table = pd.read_csv(path, dtype={"settings": str})
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
    old, new = _flat(settings_of(match[0])), _flat(settings_of(config))
    changed = [f"{key} {_show(old.get(key))} there, {_show(new.get(key))} now"
               for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
    if not changed:
        return f"{source} records this run's settings, but the rows cannot be checked. "
    return f"Settings that differ, by {source}: {'; '.join(changed)}. "


def _flat(settings: dict, prefix: str = "") -> dict:
    """{"target.sha256": …} of nested settings: a difference is named field by field."""
    out = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _show(value) -> str:
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _write_atomically(frame: pd.DataFrame, path: pathlib.Path) -> None:
    output_folder.write_frame(frame, path)


def prepare_out(configs: list[ExperimentConfig], out: pathlib.Path,
                force: bool = False) -> pd.DataFrame:
    """Make ``out`` ready for the sweep ``configs``: create it, check it is writable and no
    other process is writing it (``experiments.output_folder.claim``), delete its
    ``results.csv`` when ``force``, and refuse rows of another experiment or made under other
    settings (``check_results``). Returns the rows already there.

    The folder is claimed for the check and released after it, unless the caller holds it
    already (``with experiments.output_folder.writer(out):``), in which case it stays the
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
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--out {out} is not writable: {error}") from None
    with output_folder.writer(out):
        try:
            output_folder.write_bytes(out / ".write-test", b"")
            (out / ".write-test").unlink()
        except (OSError, output_folder.OutputError) as error:
            raise ValueError(f"--out {out} is not writable: {error}") from None
        path = out / "results.csv"
        if force:
            path.unlink(missing_ok=True)
        table = load_results(path)
        check_results(configs, out, table)
    return table


def compute_row(config: ExperimentConfig, spec: ModelSpec, seed: int,
                device: torch.device | str) -> dict:
    """One row of a sweep, computed from (config, spec, seed) alone: the data drawn again
    from the seed (``ExperimentConfig.make_data``; the last seed's data are kept, so rows of
    one seed in a row share them), torch seeded with ``seed``, the model fitted and measured
    (``run_model``), and the row's experiment, target and settings fingerprint added. The
    serial sweep and every Dask worker call this, so a row's numbers do not depend on where
    it ran (given the thread policy, ``experiments.threads``).

    Arguments:
        config, spec, seed: the row.
        device: a ``torch.device`` or "auto" / "cpu" / "cuda" (``resolve_device``).

    Returns:
        the row: every ``COLUMNS`` entry (and whatever else the kind reported).

    Raises:
        ValueError: a bad device, a seed not an integer in [0, 2**63 - 1], or from the kind
            (see ``run_model``).
    """
    seed = check_seed(seed)
    if not isinstance(device, torch.device):
        device = resolve_device(device)
    torch.manual_seed(seed)
    row = run_model(spec, config, _data_of(config, seed), seed, device)
    row.update(experiment=config.name, target=config.target.label(),
               settings=settings_fingerprint(config))
    return row


#: Data sets a process keeps (``_data_of``), the least recently used dropped first: the rows of
#: one (config, seed) share their data, and a Dask worker gets rows of several sweeps and seeds
#: in turn (``sparselab reproduce --workers`` runs every sweep at once), so keeping the last
#: one only made it draw a data set for most rows — 0.4 s each on the subspace quick sweep,
#: up to 128 s of its 312 rows.
DATA_CACHE_SIZE = 8
#: At most this many bytes of data sets are kept (all four arrays of each; the subspace quick
#: sweep's are 57 MB): a larger one is drawn for each row.
DATA_CACHE_MAX_BYTES = 512 * 2**20

_last_data: collections.OrderedDict = collections.OrderedDict()


def _nbytes(data) -> int:
    return sum(int(getattr(a, "nbytes", 0)) for a in data)


def _data_of(config: ExperimentConfig, seed: int):
    """``_make_data(config, seed)``, keeping the last used ones (at most ``DATA_CACHE_SIZE``
    of ``DATA_CACHE_MAX_BYTES`` in all): rows of one seed share data."""
    data_key = (config.target, config.n_train, config.n_eval, config.noise_std, seed)
    if data_key in _last_data:
        _last_data.move_to_end(data_key)
        return _last_data[data_key]
    data = _make_data(config, seed)
    if _nbytes(data) <= DATA_CACHE_MAX_BYTES:
        _last_data[data_key] = data
        while len(_last_data) > DATA_CACHE_SIZE or \
                sum(_nbytes(d) for d in _last_data.values()) > DATA_CACHE_MAX_BYTES:
            _last_data.popitem(last=False)
    return data


def run_sweep(configs: list[ExperimentConfig], out: pathlib.Path, device: str = "auto",
              progress: bool = True, on_row: Callable[[dict], None] | None = None,
              force: bool = False, workers: int | None = None,
              scheduler: str | None = None) -> pd.DataFrame:
    """Run every (config, seed, model) not yet in ``out/results.csv``; return the rows of this
    sweep (rows of models no longer in ``configs`` stay in the file but are left out).

    Arguments:
        configs: the sweep (one experiment may have several configs, e.g. one per k).
        out: output folder, created if needed; this process is its only writer for the
            sweep (``experiments.output_folder``).
        device: "auto", "cpu" or "cuda" (on Dask workers: each worker's own device; with
            ``workers``, "cuda" gives each worker one GPU).
        progress: show a progress bar (rows done over rows of the sweep, across workers).
        on_row: called with each new row, once written (tests use it to simulate an
            interruption).
        force: delete ``out/results.csv`` first and run every row anew.
        workers: compute the rows on a local Dask cluster of this many single-threaded
            worker processes (``experiments.engine``); None (and no ``scheduler``): one after
            another in this process, with one thread (``experiments.threads``).
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
            at ``scheduler`` that cannot be reached (``experiments.engine.Engine.start``).
    """
    progress = check_bool(progress, "progress")
    force = check_bool(force, "force")
    use_engine = workers is not None or scheduler is not None
    if use_engine:
        from experiments.engine import check_engine_options
        check_engine_options(workers, scheduler, device)
        torch_device = None
    else:
        torch_device = resolve_device(device)
    out = pathlib.Path(out)
    with output_folder.writer(out):
        table = prepare_out(configs, out, force=force)
        path = out / "results.csv"
        done = set(map(tuple, table[ROW_KEY].astype(str).to_numpy())) if len(table) else set()
        rows = table.to_dict("records")
        filled = False
        # rows written before the normalised errors existed: filled from their own labels
        unnormalised = {tuple(map(str, (row[c] for c in ROW_KEY))): i
                        for i, row in enumerate(rows)
                        if pd.isna(row.get("eval_nmse")) or pd.isna(row.get("train_nmse"))}
        pending, n_jobs, order = [], 0, {}
        for config in configs:
            settings = settings_fingerprint(config)
            for seed in config.seeds:
                for spec in config.models:
                    n_jobs += 1
                    key = tuple(map(str, (config.name, config.target.label(), spec.key(),
                                          fit_of(spec, config), seed, settings)))
                    order.setdefault(key, len(order))
                    if key not in done:
                        pending.append((config, seed, spec, key))
                        done.add(key)  # a model listed twice is computed once
                    elif key in unnormalised:
                        old = rows[unnormalised.pop(key)]
                        X, y, X_eval, y_eval = _data_of(config, seed)
                        old.update(normalised_errors(old["train_mse"], old["eval_mse"], y,
                                                     y_eval))
                        filled = True

        kept = [n_jobs - len(pending)]  # this sweep's rows in results.csv

        def record(row):
            rows.append({c: row.get(c) for c in COLUMNS})
            _write_atomically(pd.DataFrame(rows, columns=COLUMNS), path)
            kept[0] += 1
            bar.update(1)
            if on_row is not None:
                on_row(row)

        with tqdm(total=n_jobs, initial=n_jobs - len(pending),
                  desc=configs[0].name if configs else "sweep", disable=not progress) as bar, \
                _say_kept_on_interrupt(kept, n_jobs, path):
            if filled:  # new rows' writes would hold them too; this covers a sweep without any
                _write_atomically(pd.DataFrame(rows, columns=COLUMNS), path)
            if use_engine:
                from experiments.engine import open_engine
                with open_engine(workers=workers, scheduler=scheduler,
                                 device=device) as engine:
                    for row in engine.rows([(c, spec, seed) for c, seed, spec, _ in pending]):
                        record(row)
                if pending:  # the rows came as the workers finished them: the serial order
                    rows.sort(key=lambda row: order.get(
                        tuple(map(str, (row[c] for c in ROW_KEY))), len(order)))
                    _write_atomically(pd.DataFrame(rows, columns=COLUMNS), path)
            else:
                with single_threaded():
                    for config, seed, spec, _ in pending:
                        record(compute_row(config, spec, seed, torch_device))
    frame = pd.DataFrame(rows, columns=COLUMNS)
    # rows of models no longer in the configs stay on disk but are not part of this sweep
    wanted = {tuple(map(str, (c.name, c.target.label(), m.key(), fit_of(m, c), s,
                              settings_fingerprint(c))))
              for c in configs for s in c.seeds for m in c.models}
    keep = [tuple(map(str, key)) in wanted for key in frame[ROW_KEY].itertuples(index=False)]
    return frame[keep].reset_index(drop=True)


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


def _make_data(config: ExperimentConfig, seed: int):
    """(X, y, X_eval, y_eval) of ``config`` for ``seed`` (``ExperimentConfig.make_data``)."""
    return config.make_data(seed)
