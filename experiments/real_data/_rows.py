"""What the real-data experiments share (``experiments.real_data``): their data, the
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

from experiments.claims import CLAIM_COLUMNS, Claim
from experiments.datasets import as_float, find_dataset, load_dataset
from experiments.real_data._configs import experiment_config
from routing.validation import check_seed


def _data(preset: str, data_dir, dataset: str | None = None):
    """(dataset name, X_train, y_train, X_test, y_test) uint8 images and int64 labels."""
    if data_dir is None:
        name = dataset or "digits"
    else:
        name = dataset or find_dataset(data_dir)
    X_train, y_train = load_dataset(name, "train", data_dir)
    X_test, y_test = load_dataset(name, "test", data_dir)
    return name, X_train, y_train, X_test, y_test


def _flat(X_train, y_train, X_test, y_test) -> tuple:
    """The continual harness's input (``run_continual_model``'s ``data``): the images as
    float pixels flattened to (N, d), beside their labels."""
    return (as_float(X_train).reshape(len(X_train), -1), y_train,
            as_float(X_test).reshape(len(X_test), -1), y_test)


def _fingerprint(config) -> str:
    from experiments.sweep import settings_fingerprint

    data = {k: v for k, v in config.to_dict().items() if k not in ("budget",)}
    return settings_fingerprint(data)  # drops preset, models, seeds (NOT_SETTINGS)


def _holding_out(run):
    """Run an experiment with its ``out`` folder held (``experiments.output_folder.writer``):
    a second process writing into it is refused at once, naming the holder."""
    @functools.wraps(run)
    def wrapped(preset, out, *args, **kwargs):
        from experiments.output_folder import writer
        from routing.validation import check_bool

        for flag in ("force", "progress", "rows_only"):
            if flag in kwargs:
                kwargs[flag] = check_bool(kwargs[flag], flag)
        with writer(out):
            return run(preset, out, *args, **kwargs)
    return wrapped


def settings_of(name: str, preset: str, dataset: str = "digits") -> str:
    """The settings fingerprint of experiment ``name`` at ``preset`` on ``dataset`` (what a
    ``results.csv`` row of it records; ``sparselab reproduce`` keeps it in its step marker).

    Raises:
        ValueError: as ``experiment_config``.
    """
    return _fingerprint(experiment_config(name, preset, dataset))


def _write_atomically(frame: pd.DataFrame, path: pathlib.Path) -> None:
    """``frame`` as CSV at ``path``, atomically, mode 0666 minus the umask; a full disk or a
    refused permission is a one-line error (``experiments.output_folder.write_frame``)."""
    from experiments.output_folder import write_frame

    write_frame(frame, path)


def _prepare(out, name: str, settings: str, force: bool) -> pd.DataFrame:
    """Create ``out``; return the rows of ``results.csv`` (none with ``force``), refusing rows
    of this experiment made under other settings."""
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
        raise ValueError(f"{path} holds {len(other)} rows of {name!r} made under other settings "
                         f"(fingerprint {other['settings'].iloc[0]}, this run's {settings}); "
                         f"write to a new --out folder, or pass --force to start over")
    return table


def _run_rows(out: pathlib.Path, name: str, settings: str, jobs: list, table: pd.DataFrame,
              progress: bool, data=None, engine: tuple | None = None) -> pd.DataFrame:
    """Run every job (model_key, seed, fields, run) not yet in ``table``: the row's numbers
    are ``run(data)`` after ``torch.manual_seed(seed)``; each new row is written to
    ``results.csv`` atomically. With ``engine`` = (workers, scheduler, device) the jobs run on
    Dask workers (``experiments.engine.Engine.calls``, ``data`` sent to each worker once) and
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
            from experiments.threads import single_threaded

            with single_threaded():  # as on a worker: the same numbers, a neighbour costs little
                for job in todo:
                    add(job, _seeded_row(data, job[3], job[1]))
        else:
            from experiments.engine import open_engine

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
        ValueError: as ``experiments.engine.check_engine_options``.
    """
    if workers is None and scheduler is None:
        return None
    from experiments.engine import check_engine_options

    check_engine_options(workers, scheduler, device)
    return workers, scheduler, device


def _write_config(out: pathlib.Path, name: str, config, settings: str, device, data_dir,
                  n_train: int, n_test: int) -> None:
    from experiments.scale_cli import environment

    (pathlib.Path(out) / "config.json").write_text(json.dumps(
        {"experiment": name, "preset": config.preset, "dataset": config.dataset,
         "data_dir": None if data_dir is None else str(data_dir), "n_train": n_train,
         "n_test": n_test, "config": config.to_dict(), "settings": settings,
         "budget": config.budget, **environment(device)}, indent=2, default=str))


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
    names = ["results.csv", "config.json", "claims.csv", "table.md"]
    return [out / n for n in names if (out / n).exists()] + sorted(out.glob("*.png"))


def _write_claims(out: pathlib.Path, claims: list[Claim]) -> None:
    pd.DataFrame([asdict(c) for c in claims], columns=CLAIM_COLUMNS).to_csv(
        out / "claims.csv", index=False)


def _claims_markdown(claims: list[Claim]) -> list[str]:
    from experiments.report import markdown_cell as cell

    lines = ["| claim | verdict | evidence | significance | reason (when not supported) |",
             "| --- | --- | --- | --- | --- |"]
    for c in claims:
        reason = "" if c.verdict == "supported" else cell(c.diagnosis)
        lines.append(f"| {cell(c.claim)} | **{c.verdict}** | {cell(c.evidence)} | "
                     f"{cell(c.significance)} | {reason} |")
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


def _write_table(out: pathlib.Path, title: str, config, frame, claims, tables) -> None:
    lines = [f"# {title}", "", f"Data: {config.dataset}; preset {config.preset}; seeds "
             f"{', '.join(map(str, config.seeds))}; {len(frame)} rows.", "",
             f"Budget: {config.budget}.", "", *tables, "Claims:", "",
             *_claims_markdown(claims), ""]
    (out / "table.md").write_text("\n".join(lines))
