"""One row of a sweep: the settings a row's numbers depend on and their fingerprint
(``settings_of``, ``settings_fingerprint``), the data of a seed (``cached_data``), the fit and
measurement of one model (``run_model``) and the whole row (``compute_row``), a function of
(config, model spec, seed) alone, so that it gives the same numbers in this process or on a Dask
worker (``experiments.runner.engine``). The sweep that writes rows into ``results.csv`` is
``experiments.runner.sweep``.
"""

from __future__ import annotations

import collections
import hashlib
import json

import numpy as np
import pandas as pd
import torch

from experiments.kinds.registry import model_kind
from experiments.runner.specs import (LEGACY_FIELDS, ExperimentConfig, ModelSpec, canonical_fit,
                                      fit_of)
from routing.validation import as_numpy, check_points, check_real, check_seed

COLUMNS = ["experiment", "target", "model", "model_label", "model_key", "width", "k", "buckets",
           "nonempty_buckets", "activated_units", "params", "flops_paper", "flops_true",
           "flops_cost_formula", "fit", "train_mse", "eval_mse", "train_nmse", "eval_nmse",
           "linf_error", "seed", "settings", "device", "wall_s", "dead_fraction", "usage_cv"]


ROW_KEY = ["experiment", "target", "model_key", "fit", "seed", "settings"]


#: ExperimentConfig fields that are not settings: the row key holds them already (name; the
#: target's label, and the models and seeds row by row — the control seeds and models too;
#: the fit as ``fit_of``), or they change no number (preset, panels, the fits' window). Every
#: other field, including any added later, is part of the fingerprint, so a new field can
#: make a folder refuse to resume but never silently reuse rows.
NOT_SETTINGS = ("name", "preset", "models", "seeds", "fit", "panels", "fit_window",
                "control_seeds", "control_models")


#: TargetSpec fields added after fingerprints existed: part of the settings only when set.
TARGET_FIELDS_ADDED = ("path", "sha256")

#: Fields renamed after fingerprints existed: the fingerprint hashes them under the name they
#: had (``experiments.runner.specs.LEGACY_FIELDS``), so a folder written before the rename
#: resumes under the new names.
FINGERPRINT_NAMES = {new: old for old, new in LEGACY_FIELDS.items()}


def with_current_fits(table: pd.DataFrame) -> pd.DataFrame:
    """Rows read from a ``results.csv`` with each ``fit`` under today's name
    (``experiments.runner.specs.canonical_fit``: the legacy "sgd" becomes "adam" or
    "end_to_end" by the row's model kind), so rows written before the rename resume and plot
    as today's. A table without a ``fit`` column is returned as it is.

    Raises:
        TypeError: ``table`` is not a DataFrame.
        ValueError: a ``fit`` that is neither a string nor empty.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a DataFrame of results rows, got "
                        f"{type(table).__name__}")
    if "fit" not in table:
        return table
    bad = [fit for fit in table["fit"] if not isinstance(fit, str) and not pd.isna(fit)]
    if bad:
        raise ValueError(f"table['fit'] must hold regime names (str) or be empty, got "
                         f"{bad[0]!r}")
    if not (table["fit"] == "sgd").any():
        return table
    kinds = table["model"] if "model" in table else pd.Series(None, index=table.index)
    fits = [canonical_fit(fit, kind if isinstance(kind, str) else None)
            for fit, kind in zip(table["fit"], kinds)]
    return table.assign(fit=fits)


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
    is fitted and measured is its kind's (``experiments.kinds.registry.model_kind(spec.kind)``).

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
    settings = {FINGERPRINT_NAMES.get(name, name): value for name, value in data.items()
                if name not in NOT_SETTINGS}
    if isinstance(settings.get("target"), dict):
        # fields a target gained later (a data file's path and hash) count only when set, so
        # that every folder written before them keeps its fingerprint
        settings["target"] = {key: value for key, value in settings["target"].items()
                              if value is not None or key not in TARGET_FIELDS_ADDED}
    return canonical_value(settings)


def canonical_value(value):
    """``value`` in the canonical form a settings fingerprint hashes: dicts with string keys,
    lists for tuples, every number a float (so that 0 and 0.0, from a config written by hand or
    read back from JSON, give one fingerprint; float repr is the shortest round-trip form on
    every Python 3, so the JSON text does not depend on the Python version), bools, None and
    strings as they are, anything else as its ``str``.

    Arguments:
        value: a settings value (nested dicts, lists and tuples of scalars).

    Returns:
        the canonical value (dict, list, float, bool, None or str); never raises.
    """
    if isinstance(value, dict):
        return {str(k): canonical_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical_value(v) for v in value]
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


def compute_row(config: ExperimentConfig, spec: ModelSpec, seed: int,
                device: torch.device | str) -> dict:
    """One row of a sweep, computed from (config, spec, seed) alone: the data drawn again
    from the seed (``ExperimentConfig.make_data``; the last seed's data are kept, so rows of
    one seed in a row share them), torch seeded with ``seed``, the model fitted and measured
    (``run_model``), and the row's experiment, target and settings fingerprint added. The
    serial sweep and every Dask worker call this, so a row's numbers do not depend on where
    it ran (given the thread policy, ``experiments.runner.threads``).

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
    row = run_model(spec, config, cached_data(config, seed), seed, device)
    row.update(experiment=config.name, target=config.target.label(),
               settings=settings_fingerprint(config))
    return row


#: Data sets a process keeps (``cached_data``), the least recently used dropped first: the rows of
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


def cached_data(config: ExperimentConfig, seed: int):
    """The data of ``config`` for ``seed``, (X, y, X_eval, y_eval) as
    ``ExperimentConfig.make_data`` draws them, keeping the last used ones in this process (at
    most ``DATA_CACHE_SIZE`` of ``DATA_CACHE_MAX_BYTES`` in all): the rows of one seed share
    their data. The arrays are shared between callers: do not write into them.

    Arguments:
        config: the ``ExperimentConfig``. seed: its data seed (int >= 0).

    Returns:
        (X (n_train, d) float64, y (n_train,) float64, X_eval (n_eval, d), y_eval (n_eval,)).

    Raises:
        ValueError: as ``ExperimentConfig.make_data`` (a bad seed, a data file that changed).
    """
    seed = check_seed(seed)
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


def _make_data(config: ExperimentConfig, seed: int):
    """(X, y, X_eval, y_eval) of ``config`` for ``seed`` (``ExperimentConfig.make_data``)."""
    return config.make_data(seed)


def settings_difference(old: dict, new: dict, width: int | None = None) -> list[str]:
    """What differs between two settings, field by field: ["<field> <old> there, <new> now",
    …], nested dicts named by dotted keys ("continual.k", "data.sha256"), in key order; what
    a refused folder's message names (``experiments.runner.sweep.check_results``,
    ``experiments.papers.real_data``).

    Arguments:
        old, new: settings as JSON values (``settings_of`` or ``canonical_value`` of a dict):
            "there" is ``old`` (the folder's), "now" is ``new`` (this run's).
        width: cut a value's text to this many characters ("…" at the end); None: whole.

    Returns:
        list of str, empty when the settings agree.

    Raises:
        TypeError: ``old`` or ``new`` not a dict; ValueError: ``width`` not an int >= 2.
    """
    from routing.validation import check_int

    for name, value in (("old", old), ("new", new)):
        if not isinstance(value, dict):
            raise TypeError(f"{name} must be a dict of settings, got {type(value).__name__}")
    if width is not None:
        width = check_int(width, "width", 2)
    old, new = _dotted(old), _dotted(new)
    return [f"{key} {_shown(old.get(key), width)} there, {_shown(new.get(key), width)} now"
            for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]


def _dotted(settings: dict, prefix: str = "") -> dict:
    """{"target.sha256": leaf} of nested settings (an empty dict and a list are leaves)."""
    out = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            out.update(_dotted(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _shown(value, width: int | None) -> str:
    """A settings value as a refusal names it: whole numbers without ".0", JSON for lists
    and dicts, cut to ``width`` characters."""
    if isinstance(value, float) and np.isfinite(value) and value == int(value):
        return str(int(value))
    text = json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value)
    return text if width is None or len(text) <= width else text[:width - 3] + "…"


def resume_rows(path, table, jobs: list, compute, key_columns, parallel=None,
                columns=None, progress: bool = True, desc: str = "rows", on_row=None):
    """The resumable rows of a ``results.csv``: compute every job whose row is not in
    ``table`` yet, write the whole table atomically after each new row
    (``experiments.runner.output_folder.write_frame``), so an interrupted run loses no
    finished row and its rerun computes only the rest.

    Arguments:
        path: the ``results.csv`` to write.
        table: its rows already there (a DataFrame, possibly empty).
        jobs: [(key, task)] in the serial order; ``key`` a tuple of the row's
            ``key_columns`` values (compared as strings: a row read back from CSV matches).
            A key listed twice is computed once.
        compute: ``task -> row`` (a dict holding ``key_columns``), called here one job after
            another with one thread (``experiments.runner.threads.single_threaded``), when
            ``parallel`` is None.
        key_columns: the columns that identify a row.
        parallel: None, or ``tasks -> iterator of rows`` yielding the rows of the pending
            tasks as they complete, in any order (``experiments.runner.engine``); the file's
            rows are then put back in the serial order at the end.
        columns: the columns written, in order (a row's other entries are dropped); None:
            every entry of the rows, in order of first appearance.
        progress: show a progress bar (``desc``: its label) over all of ``jobs``.
        on_row: called with each new row once it is written.

    Returns:
        the rows of ``jobs`` (a DataFrame in the file's order; rows of other keys stay in
        the file and are left out).

    Raises:
        ValueError: ``progress`` not a bool; ``output_folder.OutputError`` (a ValueError)
            for a file that cannot be written; and whatever ``compute`` or ``parallel``
            raise.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    from experiments.runner.output_folder import write_frame
    from experiments.runner.threads import single_threaded
    from routing.validation import check_bool

    progress = check_bool(progress, "progress")
    key_columns = list(key_columns)

    def key_of(row) -> tuple:
        return tuple(str(row.get(c)) for c in key_columns)

    rows = table.to_dict("records")
    done = {key_of(row) for row in rows}
    order: dict[tuple, int] = {}
    pending = []
    for key, task in jobs:
        key = tuple(map(str, key))
        order.setdefault(key, len(order))
        if key not in done:
            done.add(key)
            pending.append(task)

    def frame():
        return pd.DataFrame(rows, columns=columns)

    with tqdm(total=len(jobs), initial=len(jobs) - len(pending), desc=desc,
              disable=not progress) as bar:
        def record(row):
            rows.append(row if columns is None else {c: row.get(c) for c in columns})
            write_frame(frame(), path)
            bar.update(1)
            if on_row is not None:
                on_row(row)

        if parallel is None:
            with single_threaded():  # as on a worker: the same numbers
                for task in pending:
                    record(compute(task))
        else:
            if pending:  # no row left (the plots of a finished parallel run): no cluster
                for row in parallel(pending):
                    record(row)
            rows.sort(key=lambda row: order.get(key_of(row), len(order)))
            if pending:
                write_frame(frame(), path)
    result = frame()
    if not len(result):
        return result
    keep = [key_of(row) in order for row in result.to_dict("records")]
    return result[keep].reset_index(drop=True)
