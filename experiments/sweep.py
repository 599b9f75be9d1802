"""Run a sweep: fit every model of an ``ExperimentConfig`` for every seed and collect a tidy,
resumable ``results.csv`` (one row per model, configuration and seed).

Resuming: a row is identified by (experiment, target, model_key, fit, seed, settings), where
``settings`` is a fingerprint of the config fields that change a row's numbers (data sizes,
noise, training and ridge settings, the target's seed: ``settings_fingerprint``). Rows already
in ``results.csv`` are skipped, and each new row is written atomically (the whole table goes to
a temporary file that replaces ``results.csv``), so an interrupted sweep loses no finished row.
A folder whose rows of the same experiment and target were made under other settings is
refused (``check_results``) rather than mixed with the new rows.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pathlib
import tempfile
from typing import Callable

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from experiments.model_kinds import model_kind
from experiments.specs import ExperimentConfig, ModelSpec, fit_of

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


def normalised_errors(train_mse: float, eval_mse: float, y_train, y_eval) -> dict[str, float]:
    """The normalised errors of a row: ``train_nmse`` = train MSE / Var(y_train) and
    ``eval_nmse`` = eval MSE / Var(y_eval), each variance the population variance (ddof = 0)
    of the labels its MSE was computed on (noisy training labels included). 1 is the error of
    predicting the labels' mean, so errors of targets of any scale compare (issue 25; Baykal
    et al. 2022 report raw MSEs of targets whose scale we cannot match).

    Arguments:
        train_mse, eval_mse: mean squared errors, in the labels' unit squared.
        y_train, y_eval: (N,) and (M,) labels, any real dtype (computed in float64).

    Returns:
        {"train_nmse": float, "eval_nmse": float}, dimensionless; nan where the labels are
        constant (Var = 0: the ratio is undefined).

    Raises:
        ValueError: empty labels.
    """
    result = {}
    for name, mse, labels in (("train_nmse", train_mse, y_train), ("eval_nmse", eval_mse,
                                                                    y_eval)):
        labels = np.asarray(labels, dtype=np.float64).ravel()
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
    from ``config.json``): every field but ``NOT_SETTINGS``, as plain JSON values."""
    data = config.to_dict() if isinstance(config, ExperimentConfig) else dict(config)
    return _canonical({name: value for name, value in data.items() if name not in NOT_SETTINGS})


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
    """
    text = json.dumps(settings_of(config), sort_keys=True, separators=(",", ":"),
                      allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


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

    Raises:
        ValueError: naming ``results.csv``, the settings that differ where ``config.json``
            tells them, and the way out (a new ``--out`` or ``--force``).
    """
    out = pathlib.Path(out)
    path = out / "results.csv"
    table = load_results(path) if table is None else table
    if not len(table):
        return
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
    old, new = settings_of(match[0]), settings_of(config)
    changed = [f"{key} {_show(old.get(key))} there, {_show(new.get(key))} now"
               for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
    if not changed:
        return f"{source} records this run's settings, but the rows cannot be checked. "
    return f"Settings that differ, by {source}: {'; '.join(changed)}. "


def _show(value) -> str:
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def _write_atomically(frame: pd.DataFrame, path: pathlib.Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".results-", suffix=".csv")
    with os.fdopen(fd, "w") as handle:
        frame.to_csv(handle, index=False)
    os.replace(tmp, path)


def prepare_out(configs: list[ExperimentConfig], out: pathlib.Path,
                force: bool = False) -> pd.DataFrame:
    """Make ``out`` ready for the sweep ``configs``: create it, check it is writable, delete
    its ``results.csv`` when ``force``, and refuse rows made under other settings
    (``check_results``). Returns the rows already there.

    Raises:
        ValueError: unwritable ``out``, or rows made under other settings (see
            ``check_results``).
    """
    out = pathlib.Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise ValueError(f"--out {out} is not writable: {error}") from None
    path = out / "results.csv"
    if force:
        path.unlink(missing_ok=True)
    table = load_results(path)
    check_results(configs, out, table)
    return table


def run_sweep(configs: list[ExperimentConfig], out: pathlib.Path, device: str = "auto",
              progress: bool = True, on_row: Callable[[dict], None] | None = None,
              force: bool = False) -> pd.DataFrame:
    """Run every (config, seed, model) not yet in ``out/results.csv``; return the rows of this
    sweep (rows of models no longer in ``configs`` stay in the file but are left out).

    Arguments:
        configs: the sweep (one experiment may have several configs, e.g. one per k).
        out: output folder, created if needed.
        device: "auto", "cpu" or "cuda".
        progress: show a progress bar.
        on_row: called with each new row (tests use it to simulate an interruption).
        force: delete ``out/results.csv`` first and run every row anew.

    Rows of this sweep read from a ``results.csv`` written before rows carried ``train_nmse``
    and ``eval_nmse`` get them on resuming, from the labels drawn again: the data are a
    function of the settings the row's fingerprint checks and of its seed, so the
    variances are those the MSEs were computed on, and no model is refitted. Rows of models
    no longer in ``configs`` keep nan there.

    Raises:
        ValueError: bad device, unwritable ``out``, rows in ``out/results.csv`` made under
            other settings (``check_results``), or a model that does not fit in memory.
    """
    torch_device = resolve_device(device)
    out = pathlib.Path(out)
    table = prepare_out(configs, out, force=force)
    path = out / "results.csv"
    done = set(map(tuple, table[ROW_KEY].astype(str).to_numpy())) if len(table) else set()
    jobs = [(c, s, m) for c in configs for s in c.seeds for m in c.models]
    data_cache: dict = {}

    def data_of(config, seed):
        data_key = (config.target, config.n_train, config.n_eval, config.noise_std, seed)
        if data_key not in data_cache:
            data_cache.clear()
            data_cache[data_key] = _make_data(config, seed)
        return data_cache[data_key]

    rows = table.to_dict("records")
    filled = False
    # rows written before the normalised errors existed: filled below from their own labels
    unnormalised = {tuple(map(str, (row[c] for c in ROW_KEY))): i for i, row in enumerate(rows)
                    if pd.isna(row.get("eval_nmse")) or pd.isna(row.get("train_nmse"))}
    for config, seed, spec in tqdm(jobs, desc=configs[0].name if configs else "sweep",
                                   disable=not progress):
        fit = fit_of(spec, config)
        settings = settings_fingerprint(config)
        key = tuple(map(str, (config.name, config.target.label(), spec.key(), fit, seed,
                              settings)))
        if key in done:
            if key in unnormalised:
                old = rows[unnormalised.pop(key)]
                X, y, X_eval, y_eval = data_of(config, seed)
                old.update(normalised_errors(old["train_mse"], old["eval_mse"], y, y_eval))
                filled = True
            continue
        torch.manual_seed(seed)
        row = run_model(spec, config, data_of(config, seed), seed, torch_device)
        row.update(experiment=config.name, target=config.target.label(), settings=settings)
        rows.append({c: row.get(c) for c in COLUMNS})
        _write_atomically(pd.DataFrame(rows, columns=COLUMNS), path)
        done.add(key)
        if on_row is not None:
            on_row(row)
    if filled:  # new rows' writes hold the filled ones too; this covers a sweep without any
        _write_atomically(pd.DataFrame(rows, columns=COLUMNS), path)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    # rows of models no longer in the configs stay on disk but are not part of this sweep
    wanted = {tuple(map(str, (c.name, c.target.label(), m.key(), fit_of(m, c), s,
                              settings_fingerprint(c))))
              for c in configs for s in c.seeds for m in c.models}
    keep = [tuple(map(str, key)) in wanted for key in frame[ROW_KEY].itertuples(index=False)]
    return frame[keep].reset_index(drop=True)


def _make_data(config: ExperimentConfig, seed: int):
    """(X, y, X_eval, y_eval) of ``config`` for ``seed`` (``ExperimentConfig.make_data``)."""
    return config.make_data(seed)
