"""What the real-data experiments share (``experiments.papers.real_data``): their data, the
resumable rows (here or on Dask workers), the output folder and its files."""

from __future__ import annotations

import functools
import json
import pathlib
from dataclasses import asdict, replace

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from experiments.analysis.claims import CLAIM_COLUMNS, Claim
from experiments.runner.datasets import (IDENTITY_FIELDS, ImageData, as_float, describe_data,
                                  load_image_data)
from experiments.papers.real_data._configs import default_dataset, experiment_config
from routing.validation import check_seed


def _load(name: str, preset: str, data: str | None, data_dir) -> ImageData:
    """The data experiment ``name`` reads at ``preset``: the set named ``data``, else the one
    ``data_dir`` holds, else the preset's default (``default_dataset``)."""
    if data is None and data_dir is None:
        data = default_dataset(name, preset)
    return load_image_data(data, data_dir)


def with_data(config, data: ImageData, detail: str = ""):
    """``config`` with its budget line computed from the run: "<preset>: <data title>,
    <training> training and <test> test images of H×W×C[, detail], <n> seeds; <the preset's
    budget>"."""
    shape = "×".join(map(str, data.identity["image_shape"]))
    seeds = len(config.seeds)
    text = (f"{config.preset}: {data.title}, {data.identity['n_train']:,} training and "
            f"{data.identity['n_test']:,} test images of {shape}"
            + (f", {detail}" if detail else "")
            + f", {seeds} seed{'s' * (seeds != 1)}; {config.budget}")
    return replace(config, budget=text)


def _announce(name: str, data: ImageData, progress: bool) -> None:
    """Say on the console which data a run found, before its rows."""
    if progress:
        tqdm.write(f"{name}: data {data.describe()}")


def _flat(X_train, y_train, X_test, y_test) -> tuple:
    """The continual harness's input (``run_continual_model``'s ``data``): the images as
    float pixels flattened to (N, d), beside their labels."""
    return (as_float(X_train).reshape(len(X_train), -1), y_train,
            as_float(X_test).reshape(len(X_test), -1), y_test)


#: Config fields that change no number: texts about the run (the numbers they describe are
#: settings of their own).
_NOT_SETTINGS = ("budget", "calibration")


def _settings(config, data: ImageData) -> dict:
    """What a row's numbers depend on: the config's fields but ``_NOT_SETTINGS`` and the
    data's identity (``ImageData.fingerprint``: name, split, sizes, image shape, sha256)."""
    settings = {k: v for k, v in config.to_dict().items() if k not in _NOT_SETTINGS}
    return {**settings, "data": data.fingerprint()}


def _fingerprint(config, data: ImageData) -> str:
    from experiments.runner.rows import settings_fingerprint

    return settings_fingerprint(_settings(config, data))  # drops preset, models, seeds


def _holding_out(run):
    """Run an experiment with its ``out`` folder held (``experiments.runner.output_folder.writer``):
    a second process writing into it is refused at once, naming the holder."""
    @functools.wraps(run)
    def wrapped(preset, out, *args, **kwargs):
        from experiments.runner.output_folder import writer
        from routing.validation import check_bool

        for flag in ("force", "progress", "rows_only"):
            if flag in kwargs:
                kwargs[flag] = check_bool(kwargs[flag], flag)
        with writer(out):
            return run(preset, out, *args, **kwargs)
    return wrapped


def settings_of(name: str, preset: str, dataset: str | None = None, data_dir=None) -> str:
    """The settings fingerprint of experiment ``name`` at ``preset`` on ``dataset`` (None:
    the one ``data_dir`` holds, else the preset's default, ``default_dataset``), the data's
    identity included: what a ``results.csv`` row of it records; ``sparselab reproduce``
    keeps it in its step marker. Reads the data (a second or two for MNIST-5k).

    Raises:
        ValueError: as ``experiment_config`` and the data loaders.
    """
    data = _load(name, preset, dataset, data_dir)
    return _fingerprint(_configured(name, preset, data), data)


def _configured(name: str, preset: str, data: ImageData, seeds=None, calibration=None):
    """The config of experiment ``name`` at ``preset`` for the data read: the preset's, with
    ``seeds``, the continual sizes matched on the data's pixels, a calibration file's rates
    (continual), and the budget computed from the data."""
    config = _seeds(experiment_config(name, preset, data.name), seeds)
    detail = ""
    if name == "continual":
        from experiments.kinds.continual_harness import ContinualSettings, class_split
        from experiments.papers.real_data._configs import _with_matched, with_calibration

        if calibration is not None:
            config = with_calibration(config, calibration)
        d_in = int(np.prod(data.X_train.shape[1:]))
        if config.d_in != d_in:  # files of another image size than the data set's own
            config = _with_matched(config, d_in)
        s = ContinualSettings(**config.continual)
        tasks = class_split(s.n_tasks, s.classes_per_task, "naive")
        per_task = [int(np.isin(data.y_train, task).sum()) for task in tasks]
        count = (f"{min(per_task):,}" if min(per_task) == max(per_task) else
                 f"{min(per_task):,}–{max(per_task):,}")
        detail = (f"{s.n_tasks} tasks of {s.classes_per_task} classes, {count} training images "
                  f"a task")
    elif calibration is not None:
        raise ValueError(f"calibration is an option of the continual experiment, not of "
                         f"{name!r}")
    return with_data(config, data, detail)


def _write_atomically(frame: pd.DataFrame, path: pathlib.Path) -> None:
    """``frame`` as CSV at ``path``, atomically, mode 0666 minus the umask; a full disk or a
    refused permission is a one-line error (``experiments.runner.output_folder.write_frame``)."""
    from experiments.runner.output_folder import write_frame

    write_frame(frame, path)


def _prepare(out, name: str, settings: str, force: bool, config=None,
             data: ImageData | None = None) -> pd.DataFrame:
    """Create ``out``; return the rows of ``results.csv`` (none with ``force``), refusing rows
    of this experiment made under other settings, naming field by field what differs from
    the ``config.json`` that describes them (``config`` and ``data``: this run's)."""
    out = pathlib.Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / ".write-test").write_text("")
        (out / ".write-test").unlink()
    except OSError as error:
        raise ValueError(f"--out {out} is not writable: {error}") from None
    path = out / "results.csv"
    if force:
        path.unlink(missing_ok=True)
    if not path.exists():
        return pd.DataFrame()
    table = pd.read_csv(path, dtype={"settings": str})
    other = table[(table["experiment"] == name) & (table["settings"] != settings)]
    if len(other):
        found = other["settings"].iloc[0]
        differ = _difference(out / "config.json", found, config, data)
        raise ValueError(f"{path} holds {len(other)} rows of {name!r} made under other settings "
                         f"(fingerprint {found}, this run's {settings}){differ}; write to a new "
                         f"--out folder, or pass --force to start over")
    return table


def _difference(path: pathlib.Path, found: str, config, data: ImageData | None) -> str:
    """": <field> <there> there, <now> now; …" from the ``config.json`` at ``path`` when it
    describes the rows of fingerprint ``found``; else why it cannot be told."""
    if config is None or data is None:
        return ""
    try:
        recorded = json.loads(path.read_text())
        old = {**{k: v for k, v in recorded["config"].items() if k not in _NOT_SETTINGS},
               "data": {k: recorded["data"][k] for k in IDENTITY_FIELDS}}
    except (OSError, ValueError, KeyError, TypeError):
        return " (no config.json beside them tells which settings differ)"
    if str(recorded.get("settings")) != str(found):
        return f" ({path.name} beside them records fingerprint {recorded.get('settings')}, " \
               f"not theirs: it cannot tell which settings differ)"
    from experiments.runner.rows import canonical_value

    old, new = _flatten(canonical_value(old)), _flatten(canonical_value(_settings(config, data)))
    changed = [f"{key} {_short(old.get(key))} there, {_short(new.get(key))} now"
               for key in sorted(set(old) | set(new)) if old.get(key) != new.get(key)]
    return (": " + "; ".join(changed)) if changed else ""


def _flatten(value, prefix: str = "") -> dict:
    """{"a.b.c": leaf} of nested dicts (lists are leaves)."""
    if isinstance(value, dict) and value:
        out = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: value}


def _short(value) -> str:
    if isinstance(value, float) and np.isfinite(value) and value == int(value):
        return str(int(value))
    text = json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 80 else text[:77] + "…"


def _run_rows(out: pathlib.Path, name: str, settings: str, jobs: list, table: pd.DataFrame,
              progress: bool, data=None, engine: tuple | None = None) -> pd.DataFrame:
    """Run every job (model_key, seed, fields, run) not yet in ``table``: the row's numbers
    are ``run(data)`` after ``torch.manual_seed(seed)``; each new row is written to
    ``results.csv`` atomically. With ``engine`` = (workers, scheduler, device) the jobs run on
    Dask workers (``experiments.runner.engine.Engine.calls``, ``data`` sent to each worker once) and
    the file's rows are put back in job order at the end, so that it is the serial run's.
    Returns this run's rows."""
    path = pathlib.Path(out) / "results.csv"
    rows = table.to_dict("records")
    done = {tuple(map(str, (r["experiment"], r["model_key"], r["seed"], r["settings"])))
            for r in rows}
    todo = [job for job in jobs if (name, str(job[0]), str(job[1]), settings) not in done]
    bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc=name,
               disable=not progress)

    def add(job, numbers):
        model_key, seed, fields, _ = job
        rows.append({"experiment": name, "model_key": model_key, "seed": seed,
                     "settings": settings, **fields, **numbers})
        _write_atomically(pd.DataFrame(rows), path)
        bar.update()

    with bar:
        if engine is None:
            from experiments.runner.threads import single_threaded

            with single_threaded():  # as on a worker: the same numbers, a neighbour costs little
                for job in todo:
                    add(job, _seeded_row(data, job[3], job[1]))
        else:
            from experiments.runner.engine import open_engine

            if todo:  # no row left (the claims and plots of a parallel run): no cluster
                with open_engine(*engine) as client:
                    for i, numbers in client.calls(_seeded_row, [(job[3], job[1])
                                                                      for job in todo],
                                                   shared=data, name=f"{name}-row"):
                        add(todo[i], numbers)
            order = {(str(k), str(s)): i for i, (k, s, *_) in enumerate(jobs)}
            rows.sort(key=lambda r: order.get((str(r["model_key"]), str(r["seed"])),
                                              len(order)))
            if todo:
                _write_atomically(pd.DataFrame(rows), path)
    frame = pd.DataFrame(rows)
    wanted = {(str(k), str(s)) for k, s, *_ in jobs}
    keep = [(str(k), str(s)) in wanted and e == name and str(f) == settings
            for e, k, s, f in zip(frame["experiment"], frame["model_key"], frame["seed"],
                                  frame["settings"].astype(str))]
    return frame[keep].reset_index(drop=True)


def _seeded_row(data, run, seed: int) -> dict:
    """One row's numbers: ``run(data)`` after ``torch.manual_seed(seed)`` (here, or as a Dask
    task of ``Engine.calls``, which passes the shared data first)."""
    torch.manual_seed(seed)
    return run(data)


def _engine(workers, scheduler, device) -> tuple | None:
    """(workers, scheduler, device) for ``_run_rows``, None without workers or scheduler.

    Raises:
        ValueError: as ``experiments.runner.engine.check_engine_options``.
    """
    if workers is None and scheduler is None:
        return None
    from experiments.runner.engine import check_engine_options

    check_engine_options(workers, scheduler, device)
    return workers, scheduler, device


def _write_config(out: pathlib.Path, name: str, config, settings: str, device,
                  data: ImageData) -> None:
    """``config.json``: the experiment, its config, its settings fingerprint, the data's
    identity (``experiments.runner.datasets.data_identity``: name, source, package version or
    folder and file hashes, split, sizes, image shape, the arrays' sha256) and the
    environment."""
    from experiments.runner.output_folder import write_text
    from experiments.runner.environment import environment

    identity = data.identity
    write_text(pathlib.Path(out) / "config.json", json.dumps(
        {"experiment": name, "preset": config.preset, "dataset": config.dataset,
         "data_dir": identity["data_dir"], "n_train": identity["n_train"],
         "n_test": identity["n_test"], "data": identity, "config": config.to_dict(),
         "settings": settings, "budget": config.budget, **environment(device)}, indent=2,
        default=str))


def data_of(out) -> str:
    """One line naming the data of the image experiment in folder ``out`` (its
    ``config.json``'s "data": ``experiments.runner.datasets.describe_data``), for the report;
    "" for a folder without one (written before data identified itself).

    Raises:
        ValueError: a ``config.json`` that is not JSON.
    """
    path = pathlib.Path(out) / "config.json"
    if not path.exists():
        return ""
    try:
        identity = json.loads(path.read_text()).get("data")
    except ValueError as error:
        raise ValueError(f"{path} is not JSON: {error}") from None
    return describe_data(identity) if isinstance(identity, dict) else ""


def _seeds(config, seeds):
    if seeds is None:
        return config
    seeds = tuple(check_seed(s) for s in seeds)
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    return replace(config, seeds=seeds)


def _tensor(X: np.ndarray, device, flat: bool) -> torch.Tensor:
    x = as_float(X)
    return torch.from_numpy(x.reshape(len(x), -1) if flat else x).to(device)


def output_files(out) -> list[pathlib.Path]:
    """The files an experiment wrote into ``out`` (results.csv, config.json, claims.csv,
    table.md and the plots), for ``sparselab reproduce``'s step list."""
    out = pathlib.Path(out)
    names = ["results.csv", "config.json", "claims.csv", "table.md", "accuracy_matrix.csv"]
    return [out / n for n in names if (out / n).exists()] + sorted(out.glob("*.png"))


def _write_claims(out: pathlib.Path, claims: list[Claim]) -> None:
    pd.DataFrame([asdict(c) for c in claims], columns=CLAIM_COLUMNS).to_csv(
        out / "claims.csv", index=False)


def _claims_markdown(claims: list[Claim]) -> list[str]:
    from experiments.analysis.tables import markdown_cell as cell

    lines = ["| claim | source | verdict | evidence | significance | reason (when not "
             "supported) |", "| --- | --- | --- | --- | --- | --- |"]
    for c in claims:
        reason = "" if c.verdict == "supported" else cell(c.diagnosis)
        lines.append(f"| {cell(c.claim)} | {cell(c.source)} | **{c.verdict}** | "
                     f"{cell(c.evidence)} | {cell(c.significance)} | {reason} |")
    return lines


def _mean_sd(frame: pd.DataFrame, index, columns, value) -> pd.DataFrame:
    """(index × columns) table of "mean ± sd" (sd over seeds; the mean alone for one seed)."""
    g = frame.groupby([index, columns], sort=False)[value]
    mean, sd = g.mean().unstack(columns), g.std(ddof=1).unstack(columns)
    text = mean.copy().astype(object)
    for r in mean.index:
        for c in mean.columns:
            m, s = mean.loc[r, c], sd.loc[r, c]
            text.loc[r, c] = ("" if not np.isfinite(m) else f"{m:.3f} ± {s:.3f}"
                              if np.isfinite(s) else f"{m:.3f}")
    return text.sort_index()


def _write_table(out: pathlib.Path, title: str, config, frame, claims, tables,
                 data: ImageData) -> None:
    lines = [f"# {title}", "", f"Data: {data.describe()}.", "",
             f"Preset {config.preset}; seeds {', '.join(map(str, config.seeds))}; "
             f"{len(frame)} rows.", "", f"Budget: {config.budget}.", "", *tables, "Claims:", "",
             *_claims_markdown(claims), ""]
    from experiments.runner.output_folder import write_text

    write_text(out / "table.md", "\n".join(lines))
