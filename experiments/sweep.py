"""Run a sweep: fit every model of an ``ExperimentConfig`` for every seed and collect a tidy,
resumable ``results.csv`` (one row per model, configuration and seed).

Resuming: a row is identified by (experiment, target, model_key, fit, seed); rows already in
``results.csv`` are skipped, and each new row is written atomically (the whole table goes to
a temporary file that replaces ``results.csv``), so an interrupted sweep loses no finished row.
"""

from __future__ import annotations

import os
import pathlib
import tempfile
import time
from typing import Callable

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from experiments.specs import ROUTER_KINDS, ExperimentConfig, ModelSpec, data_seeds, fit_of
from lipschitz import make_dataset

COLUMNS = ["experiment", "target", "model", "model_label", "model_key", "width", "k", "buckets",
           "nonempty_buckets", "activated_units", "params", "flops_paper", "flops_true", "fit",
           "train_mse", "eval_mse", "linf_error", "seed", "device", "wall_s", "dead_fraction",
           "usage_cv"]
ROW_KEY = ["experiment", "target", "model_key", "fit", "seed"]

#: Largest number of float32 bottom-layer activations a model may hold for one batch of the
#: exact fit before we refuse (4 GiB): an estimate made before allocating anything.
MAX_FEATURE_BYTES = 4 << 30


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


def build_model(spec: ModelSpec, dim: int, seed: int) -> torch.nn.Module:
    """The torch model of ``spec`` (kinds dense, dsm, random_hash, lsh)."""
    from experiments.models import DSM, Dense, LSHModel, RandomHashModel

    if spec.kind == "dense":
        return Dense(dim, spec.width, seed=seed)
    if spec.kind == "dsm":
        return DSM(dim, spec.width, spec.k, seed=seed)
    if spec.kind == "random_hash":
        return RandomHashModel(dim, spec.width, spec.k, seed=seed)
    if spec.kind == "lsh":
        return LSHModel(dim, n_bits=spec.n_bits, n_tables=spec.n_tables, seed=seed)
    raise ValueError(f"no torch model for kind {spec.kind!r}")


def run_model(spec: ModelSpec, config: ExperimentConfig, data, seed: int,
              device: torch.device) -> dict:
    """Fit one model on ``data = (X, y, X_eval, y_eval)`` and measure it: a results row."""
    X, y, X_eval, y_eval = data
    dim = X.shape[1]
    start = time.perf_counter()
    if spec.kind == "lsh_table":
        row = _run_lsh_table(spec, data, seed)
    elif spec.kind in ROUTER_KINDS:
        row = _run_router(spec, config, data, seed, device)
    else:
        if spec.kind in ("dense", "dsm", "random_hash") and config.fit == "exact":
            needed = 4 * spec.width * min(len(X), 65536)
            if needed > MAX_FEATURE_BYTES:
                raise ValueError(f"width={spec.width} needs {needed / 2**30:.1f} GiB of features "
                                 f"per batch; at most {MAX_FEATURE_BYTES / 2**30:.0f} GiB")
        from experiments.fitting import SGDConfig, evaluate, fit_model

        model = build_model(spec, dim, seed).to(device)
        sgd = SGDConfig(steps=config.sgd_steps, lr=config.sgd_lr, batch_size=config.sgd_batch)
        report = fit_model(model, X, y, fit=config.fit, sgd=sgd, ridge=config.ridge, seed=seed)
        metrics = evaluate(model, X_eval, y_eval)
        row = {"width": getattr(model, "width", None), "k": getattr(model, "k", None),
               "buckets": model.total_units if spec.kind == "lsh" else None,
               "nonempty_buckets": None, "activated_units": model.activated_units,
               "params": model.n_params, "flops_paper": model.flops_paper(),
               "flops_true": model.flops_true(), "train_mse": report.train_mse,
               "eval_mse": metrics["mse"], "linf_error": metrics["linf"]}
    row.update(model=spec.kind, model_label=spec.display(), model_key=spec.key(),
               fit=fit_of(spec, config), seed=seed,
               device=str(device) if spec.kind != "lsh_table" else "cpu",
               wall_s=round(time.perf_counter() - start, 4))
    return row


def _run_router(spec: ModelSpec, config: ExperimentConfig, data, seed: int,
                device: torch.device) -> dict:
    """Train a router layer end to end (``experiments.router_training``) and measure it."""
    from experiments.router_layers import build_router
    from experiments.router_training import (RouterRegressor, RouterTraining, evaluate_router,
                                             train_router)

    X, y, X_eval, y_eval = data
    epochs = max(1, config.sgd_steps * min(config.sgd_batch, len(X)) // len(X))
    layer = build_router(spec, X.shape[1], seed, epochs=epochs)
    model = RouterRegressor(layer).to(device)
    training = RouterTraining(steps=config.sgd_steps, batch_size=config.sgd_batch, lr=spec.lr)
    report = train_router(model, X, y, training, seed=seed)
    metrics = evaluate_router(model, X_eval, y_eval)
    info = layer.describe()
    dim = X.shape[1]
    return {"width": spec.width, "k": spec.k, "buckets": None, "nonempty_buckets": None,
            "activated_units": info["activated_units"], "params": info["params"],
            "flops_paper": 2 * (dim + 1) * info["activated_units"],
            "flops_true": info["flops"], "train_mse": report.train_mse,
            "eval_mse": metrics["mse"], "linf_error": metrics["linf"],
            "dead_fraction": metrics["dead_fraction"], "usage_cv": metrics["usage_cv"]}


def _run_lsh_table(spec: ModelSpec, data, seed: int) -> dict:
    """routing.LSHTable with Euclidean LSH (bucket means): the learner of Theorem 4.1."""
    from routing.bucket_geometry import n_nonempty_buckets
    from routing.euclidean_lsh import EuclideanLSH
    from routing.lsh_table import LSHTable

    X, y, X_eval, y_eval = data
    dim = X.shape[1]
    hasher = EuclideanLSH(dim, spec.n_hashes, spec.bucket_width, n_tables=spec.n_tables,
                          seed=seed)
    table = LSHTable(hasher).fit(X, y)
    train_error = table.predict(X) - y
    error = table.predict(X_eval) - y_eval
    nonempty = int(np.sum(n_nonempty_buckets(hasher.bucket_ids(X))))
    # Paper convention: 2·(dim+1) per activated unit; one activated bucket per table. True
    # cost: hashing (2·dim·n_hashes per table) plus one lookup and the average.
    return {"width": None, "k": None, "buckets": nonempty, "nonempty_buckets": nonempty,
            "activated_units": spec.n_tables, "params": nonempty,
            "flops_paper": 2 * (dim + 1) * spec.n_tables,
            "flops_true": 2 * dim * spec.n_hashes * spec.n_tables + spec.n_tables,
            "train_mse": float(np.mean(train_error**2)), "eval_mse": float(np.mean(error**2)),
            "linf_error": float(np.max(np.abs(error)))}


def load_results(path: pathlib.Path) -> pd.DataFrame:
    """``results.csv`` as a DataFrame (empty with the right columns if missing)."""
    path = pathlib.Path(path)
    if not path.exists():
        return pd.DataFrame(columns=COLUMNS)
    return pd.read_csv(path)


def _write_atomically(frame: pd.DataFrame, path: pathlib.Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".results-", suffix=".csv")
    with os.fdopen(fd, "w") as handle:
        frame.to_csv(handle, index=False)
    os.replace(tmp, path)


def run_sweep(configs: list[ExperimentConfig], out: pathlib.Path, device: str = "auto",
              progress: bool = True, on_row: Callable[[dict], None] | None = None) -> pd.DataFrame:
    """Run every (config, seed, model) not yet in ``out/results.csv``; return the rows of this
    sweep (rows of models no longer in ``configs`` stay in the file but are left out).

    Arguments:
        configs: the sweep (one experiment may have several configs, e.g. one per k).
        out: output folder, created if needed.
        device: "auto", "cpu" or "cuda".
        progress: show a progress bar.
        on_row: called with each new row (tests use it to simulate an interruption).

    Raises:
        ValueError: bad device, unwritable ``out``, or a model that does not fit in memory.
    """
    torch_device = resolve_device(device)
    out = pathlib.Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise ValueError(f"--out {out} is not writable: {error}") from None
    path = out / "results.csv"
    table = load_results(path)
    done = set(map(tuple, table[ROW_KEY].astype(str).to_numpy())) if len(table) else set()
    jobs = [(c, s, m) for c in configs for s in c.seeds for m in c.models]
    data_cache: dict = {}
    rows = table.to_dict("records")
    for config, seed, spec in tqdm(jobs, desc=configs[0].name if configs else "sweep",
                                   disable=not progress):
        fit = fit_of(spec, config)
        key = tuple(map(str, (config.name, config.target.label(), spec.key(), fit, seed)))
        if key in done:
            continue
        data_key = (config.target, config.n_train, config.n_eval, config.noise_std, seed)
        if data_key not in data_cache:
            data_cache.clear()
            data_cache[data_key] = _make_data(config, seed)
        torch.manual_seed(seed)
        row = run_model(spec, config, data_cache[data_key], seed, torch_device)
        row.update(experiment=config.name, target=config.target.label())
        rows.append({c: row.get(c) for c in COLUMNS})
        _write_atomically(pd.DataFrame(rows, columns=COLUMNS), path)
        done.add(key)
        if on_row is not None:
            on_row(row)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    # rows of models no longer in the configs stay on disk but are not part of this sweep
    wanted = {tuple(map(str, (c.name, c.target.label(), m.key(), fit_of(m, c), s)))
              for c in configs for s in c.seeds for m in c.models}
    keep = [tuple(map(str, key)) in wanted for key in frame[ROW_KEY].itertuples(index=False)]
    return frame[keep].reset_index(drop=True)


def _make_data(config: ExperimentConfig, seed: int):
    target, distribution = config.target.build()
    train_seed, eval_seed = data_seeds(seed)
    X, y = make_dataset(target, distribution, config.n_train, config.noise_std, train_seed)
    X_eval, y_eval = make_dataset(target, distribution, config.n_eval, 0.0, eval_seed)
    return X, y, X_eval, y_eval
