"""What the real-data experiments share (``experiments.papers.real_data``): their data, the
preamble of every run (``_start``: data, config, fingerprint, folder, config.json), the
resumable rows (the runner's ``resume_rows``, here or on Dask workers), the output folder
and its files."""

from __future__ import annotations

import functools
import json
import pathlib
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from experiments.analysis.claims import CLAIM_COLUMNS, Claim
from experiments.runner.datasets import (IDENTITY_FIELDS, ImageData, as_float, describe_data,
                                  load_image_data)
from experiments.papers.real_data._configs import (CONFIG_CLASSES, PRESETS, default_dataset,
                                                   experiment_config)
from routing.validation import check_choice, check_seed


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
    seeds, control = len(config.seeds), len(config.control_seeds)
    text = (f"{config.preset}: {data.title}, {data.identity['n_train']:,} training and "
            f"{data.identity['n_test']:,} test images of {shape}"
            + (f", {detail}" if detail else "")
            + f", {seeds} seed{'s' * (seeds != 1)}"
            + (f" (and {control} control seed{'s' * (control != 1)} of the reference model, "
               f"for the controls)" if control else "") + f"; {config.budget}")
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


#: Config fields that change no row's numbers: texts about the run (the numbers they describe
#: are settings of their own), and the controls' seeds and sizes (a control row is a row of its
#: own seed and size, both in its key).
_NOT_SETTINGS = ("budget", "calibration", "control_seeds", "control_activated",
                 "control_widths")


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


def settings_of(name: str, preset: str, dataset: str | None = None, data_dir=None,
                config=None) -> str:
    """The settings fingerprint of experiment ``name`` at ``preset`` on ``dataset`` (None:
    the one ``data_dir`` holds, else the preset's default, ``default_dataset``), the data's
    identity included: what a ``results.csv`` row of it records; ``sparselab reproduce``
    keeps it in its step marker. With ``config`` (a config of ``name`` at ``preset``, e.g.
    read from a file): that config's on its dataset (from ``data_dir`` for a folder's).
    Reads the data (a second or two for MNIST-5k).

    Raises:
        ValueError: as ``experiment_config`` and the data loaders; a ``config`` of another
            class, preset or data set.
    """
    if config is None:
        data = _load(name, preset, dataset, data_dir)
        return _fingerprint(_configured(name, preset, data), data)
    check_choice(name, "name", tuple(CONFIG_CLASSES))
    _check_given(name, preset, config, dataset, None)
    data = _load(name, preset, config.dataset, data_dir)
    return _fingerprint(_fitted(name, config, data), data)


def _preset_config(name: str, preset: str, dataset: str, seeds=None, calibration=None):
    """The config of experiment ``name`` at ``preset`` on ``dataset`` as a person would write
    it (``config_of``): the preset's, with ``seeds`` and a calibration file's rates
    (continual); its budget is the preset's alone (``_fitted`` adds the data's part)."""
    config = _seeds(experiment_config(name, preset, dataset), seeds)
    if calibration is not None:
        if name != "continual":
            raise ValueError(f"calibration is an option of the continual experiment, not of "
                             f"{name!r}")
        from experiments.papers.real_data._configs import with_calibration

        config = with_calibration(config, calibration)
    return config


def _fitted(name: str, config, data: ImageData):
    """``config`` fitted to the data read: the continual sizes matched on the data's pixels
    (``_with_matched``) and the budget computed from the data (``with_data``)."""
    detail = ""
    if name == "continual":
        from experiments.kinds.continual_harness import ContinualSettings, class_split
        from experiments.papers.real_data._configs import _with_matched

        d_in = int(np.prod(data.X_train.shape[1:]))
        if config.d_in != d_in or config.matched is None:  # other image sizes; a file's
            config = _with_matched(config, d_in)
        s = ContinualSettings(**config.continual)
        tasks = class_split(s.n_tasks, s.classes_per_task, "naive")
        per_task = [int(np.isin(data.y_train, task).sum()) for task in tasks]
        count = (f"{min(per_task):,}" if min(per_task) == max(per_task) else
                 f"{min(per_task):,}–{max(per_task):,}")
        detail = (f"{s.n_tasks} tasks of {s.classes_per_task} classes, {count} training images "
                  f"a task")
    return with_data(config, data, detail)


def _configured(name: str, preset: str, data: ImageData, seeds=None, calibration=None):
    """The config of experiment ``name`` at ``preset`` for the data read: the preset's, with
    ``seeds``, a calibration file's rates (continual), the continual sizes matched on the
    data's pixels and the budget computed from the data."""
    return _fitted(name, _preset_config(name, preset, data.name, seeds, calibration), data)


def config_of(name: str, preset: str, data: str | None = None, data_dir=None, seeds=None,
              calibration=None) -> tuple:
    """The config of experiment ``name`` at ``preset`` as a person would write it, and the
    identity of the data it would read: what ``sparselab scale --print-config`` writes as
    TOML. Run with that config (``run_cifar(..., config=...)``) on those data, an experiment
    computes the rows of the preset's run under the same settings fingerprint.

    Arguments:
        name: "cifar", "continual" or "comet_images". preset: "tiny", "quick" or "paper".
        data, data_dir: the data set by name, or the folder holding it (None: the preset's,
            ``default_dataset``). seeds: seeds (None: the preset's).
        calibration: continual: a file or dict of rates (``read_calibration``).

    Returns:
        (the config: ``CifarConfig``, ``ContinualConfig`` or ``CometImagesConfig``, its
        budget the preset's text without the data's part; the data's identity:
        ``experiments.runner.datasets.data_identity``'s dict). Reads the data.

    Raises:
        ValueError: as ``experiment_config``, ``read_calibration`` and the data loaders.
    """
    check_choice(name, "name", tuple(CONFIG_CLASSES))
    check_choice(preset, "preset", PRESETS)
    images = _load(name, preset, data, data_dir)
    return _preset_config(name, preset, images.name, seeds, calibration), images.identity


@dataclass(frozen=True)
class _Run:
    """What a real-data run's preamble (``_start``) hands its body: the config fitted to the
    data, the data, the settings fingerprint, the rows already in ``results.csv``, the engine
    options (``_engine``) and the device recorded in config.json."""

    config: object
    images: ImageData
    settings: str
    table: pd.DataFrame
    engine: tuple | None
    device: object


def _start(name: str, preset: str, out, data=None, data_dir=None, seeds=None,
           device: str = "auto", progress: bool = True, force: bool = False, workers=None,
           scheduler=None, calibration=None, config=None, data_identity=None) -> _Run:
    """A real-data run up to its rows: check the options, read the data, build the config
    (the preset's, or ``config`` given whole: ``sparselab scale --config``), fingerprint it,
    prepare ``out`` (refusing rows of other settings), write config.json and say which data
    were read.

    Raises:
        ValueError: a bad preset, device, engine option or seeds; ``config`` not the
            experiment's config class, of another preset or dataset, or beside
            ``calibration``; data whose identity differs from ``data_identity``; rows of
            other settings in ``out``; and the data loaders' errors.
    """
    from experiments.runner.sweep import run_device

    check_choice(preset, "preset", PRESETS)
    engine = _engine(workers, scheduler, device)
    torch_device = run_device(device, scheduler)
    if config is None:
        images = _load(name, preset, data, data_dir)
        _check_identity(images, data_identity)
        config = _configured(name, preset, images, seeds, calibration)
    else:
        _check_given(name, preset, config, data, calibration)
        images = _load(name, preset, config.dataset, data_dir)
        _check_identity(images, data_identity)
        config = _fitted(name, _seeds(config, seeds), images)
    settings = _fingerprint(config, images)
    table = _prepare(out, name, settings, force, config, images)
    _write_config(out, name, config, settings, torch_device, images)
    _announce(name, images, progress)
    return _Run(config, images, settings, table, engine, torch_device)


def _check_given(name: str, preset: str, config, data, calibration) -> None:
    """Refuse a ``config`` that is not experiment ``name``'s class or preset, or that another
    data set or a calibration would contradict."""
    kind = CONFIG_CLASSES[name]
    if not isinstance(config, kind):
        raise ValueError(f"config must be a {kind.__name__} (the experiment {name!r}), got "
                         f"{type(config).__name__}")
    if config.preset != preset:
        raise ValueError(f"preset {preset!r} differs from the config's preset "
                         f"{config.preset!r}")
    if data is not None and data != config.dataset:
        raise ValueError(f"data {data!r} differs from the config's dataset "
                         f"{config.dataset!r}")
    if calibration is not None:
        raise ValueError("calibration is not an option beside a config: its continual "
                         "settings hold the rates")


def _check_identity(images: ImageData, expected: dict | None) -> None:
    """Refuse data whose identity differs from ``expected`` (a config file's [data] table:
    some of ``IDENTITY_FIELDS``), naming the field, both values and the way out."""
    if expected is None:
        return
    if not isinstance(expected, dict):
        raise ValueError(f"data_identity must be a dict of {IDENTITY_FIELDS}, got "
                         f"{expected!r}")
    from experiments.runner.rows import canonical_value

    for key, value in expected.items():
        if key not in IDENTITY_FIELDS:
            raise ValueError(f"data_identity may hold {IDENTITY_FIELDS}, got {key!r}")
        if canonical_value(value) != canonical_value(images.identity[key]):
            raise ValueError(
                f"data.{key}: the data read ({images.name}) have {images.identity[key]!r}, "
                f"the config records {value!r}; these are other data than the config's "
                f"(remove its data identity to run on them)")


def _prepare(out, name: str, settings: str, force: bool, config=None,
             data: ImageData | None = None) -> pd.DataFrame:
    """Create ``out`` (``experiments.runner.output_folder.prepare_folder``); return the rows
    of ``results.csv`` (none with ``force``), refusing rows of this experiment made under
    other settings, naming field by field what differs from the ``config.json`` that
    describes them (``config`` and ``data``: this run's)."""
    from experiments.runner.output_folder import prepare_folder

    out = prepare_folder(out, force)
    path = out / "results.csv"
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
    """": <field> <there> there, <now> now; …" (``experiments.runner.rows
    .settings_difference``) from the ``config.json`` at ``path`` when it describes the rows
    of fingerprint ``found``; else why it cannot be told."""
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
    from experiments.runner.rows import canonical_value, settings_difference

    changed = settings_difference(canonical_value(old), canonical_value(_settings(config, data)),
                                  width=80)
    return (": " + "; ".join(changed)) if changed else ""


#: The columns that identify a row of an image experiment in ``results.csv``.
ROW_KEY = ("experiment", "model_key", "seed", "settings")


def _run_rows(out: pathlib.Path, name: str, settings: str, jobs: list, table: pd.DataFrame,
              progress: bool, data=None, engine: tuple | None = None) -> pd.DataFrame:
    """Run every job (model_key, seed, fields, run) not yet in ``table``: the row's numbers
    are ``run(data)`` after ``torch.manual_seed(seed)``; each new row is written to
    ``results.csv`` atomically (``experiments.runner.rows.resume_rows``). With ``engine`` =
    (workers, scheduler, device) the jobs run on Dask workers
    (``experiments.runner.engine.Engine.calls``, ``data`` sent to each worker once) and the
    file's rows are put back in job order at the end, so that it is the serial run's.
    Returns this run's rows."""
    from experiments.runner.rows import resume_rows

    def row(job, numbers) -> dict:
        model_key, seed, fields, _ = job
        return {"experiment": name, "model_key": model_key, "seed": seed,
                "settings": settings, **fields, **numbers}

    def compute(job) -> dict:
        return row(job, _seeded_row(data, job[3], job[1]))

    parallel = None
    if engine is not None:
        def parallel(todo):
            from experiments.runner.engine import open_engine

            with open_engine(*engine) as client:
                for i, numbers in client.calls(_seeded_row, [(job[3], job[1]) for job in todo],
                                               shared=data, name=f"{name}-row"):
                    yield row(todo[i], numbers)

    return resume_rows(pathlib.Path(out) / "results.csv", table,
                       [((name, job[0], job[1], settings), job) for job in jobs], compute,
                       ROW_KEY, parallel=parallel, progress=progress, desc=name)


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
    """``config`` with ``seeds`` (None: as it is); its control seeds, where they would share a
    seed with ``seeds``, move to as many seeds after the largest of them."""
    if seeds is None:
        return config
    seeds = tuple(check_seed(s) for s in seeds)
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    control = config.control_seeds
    if set(control) & set(seeds):
        control = tuple(range(max(seeds) + 1, max(seeds) + 1 + len(control)))
    return replace(config, seeds=seeds, control_seeds=control)


def run_seeds(frame: pd.DataFrame, config) -> pd.DataFrame:
    """The rows of ``frame`` at the run's seeds (``config.seeds``): those the claims, plots
    and tables read; the rows at its control seeds feed the controls alone.

    Raises:
        ValueError: ``frame`` has rows but no ``seed`` column.
    """
    if not len(frame):
        return frame
    if "seed" not in frame.columns:
        raise ValueError(f"frame must have a seed column, got columns {list(frame.columns)}")
    return frame[frame["seed"].isin(config.seeds)]


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
