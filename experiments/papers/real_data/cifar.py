"""Baykal et al. 2022, §5 "CIFAR-10", Fig. 5, Table 3: a CNN with a dense penultimate
layer against the same CNN with a data-dependent sparse Top-K layer there, at equal
activated units (``experiments.papers.real_data``)."""

from __future__ import annotations

import pathlib
import time
from dataclasses import replace

import pandas as pd
import torch

from experiments.analysis.claims import Claim
from experiments.papers.real_data._configs import CONTROL_REFERENCE, CifarConfig
from experiments.papers.real_data._rows import (_holding_out, _mean_sd, _run_rows, _start,
                                                _tensor, _write_claims, _write_table, run_seeds)
from experiments.papers.real_data._verdicts import (adjust_family, paired_claim,
                                             real_data_controls, shared_regime)

#: Baykal et al. 2022, Table 3: CIFAR-10 test accuracy (%) by activated units.
PAPER_TABLE3 = pd.DataFrame({"activated units": [256, 512], "CNN + dense": [69.79, 70.79],
                             "CNN + DSM 50% sparse": [70.74, 71.33],
                             "CNN + DSM 25% sparse": [69.8, 71.68]})


@_holding_out
def run_cifar(preset: str, out, data_dir=None, seeds=None, device: str = "auto",
              progress: bool = True, force: bool = False, workers: int | None = None,
              scheduler: str | None = None, rows_only: bool = False,
              data: str | None = None, config: CifarConfig | None = None,
              data_identity: dict | None = None) -> pd.DataFrame:
    """Baykal et al. 2022, §5 "CIFAR-10", Fig. 5 and Table 3: CNN + dense against CNN + DSM at
    equal activated units, test accuracy over seeds.

    For each activated-unit count a of the preset: "CNN + dense" (penultimate width a, all
    active) and "CNN + DSM 50% sparse" / "25% sparse" (width 2a / 4a, Top-K keeping a),
    the same CNN otherwise (``experiments.kinds.image_models.ConvNet``), trained with Adam on the
    cross-entropy; inputs scaled to [0, 1] and standardised per channel with the training
    set's mean and deviation.

    Arguments:
        preset: "tiny", "quick" or "paper" (CIFAR-10 from ``data_dir``).
        out: results folder (created).
        data_dir: folder with MNIST IDX or CIFAR-10 binary files; None: ``data``.
        seeds: seeds to run (None: the preset's).
        device: "auto", "cpu" or "cuda".
        progress: show a progress bar.
        force: start the folder's results over.
        workers, scheduler: compute the rows on a local Dask cluster of ``workers``
            processes or on the cluster at ``scheduler`` (``experiments.runner.engine``; the data
            are sent to each worker once); both None: here, one after another.
        rows_only: compute (or resume) the rows alone, without claims, plots and table
            (``sparselab reproduce --workers`` writes those in its main thread afterwards).
        data: a data set of ``experiments.runner.datasets.DATA_SETS`` by name; None: the one
            ``data_dir`` holds, else the preset's (``default_dataset``: the digits here).
        config: a ``CifarConfig`` replacing the preset's (``sparselab scale --config``; its
            preset must be ``preset``, its dataset is the data read, from ``data_dir`` for a
            folder's; ``seeds`` still override its seeds); None: the preset's. The config
            of a preset (``config_of``) run so computes the preset's rows, same fingerprint.
        data_identity: some of ``experiments.runner.datasets.IDENTITY_FIELDS`` (sha256,
            sizes, …) the data read must have (a config file's ``[data]`` table); None: no
            check.

    The data's identity (``experiments.runner.datasets.data_identity``: sha256 of the arrays, sizes,
    split) is part of the settings fingerprint: a folder whose rows were made on other data
    is refused, the message naming what differs field by field.

    Returns:
        the results rows of this run (DataFrame: model_label, width, k, activated_units,
        params, seed, train_accuracy, test_accuracy, test_error, wall_s, …).

    Raises:
        ValueError: bad preset, device, seeds, workers or scheduler; "paper" without
            ``data_dir``; rows of other settings or data in ``out``; a ``config`` of another
            class, preset or dataset; data unlike ``data_identity`` (naming the field); and the
            data loaders' errors (FileNotFoundError too).
    """
    from experiments.kinds.image_models import ConvNet, TrainSettings, accuracy, fit_classifier
    from experiments.runner.rows import resolve_device

    run = _start("cifar", preset, out, data, data_dir, seeds, device, progress, force, workers,
                 scheduler, config=config, data_identity=data_identity)
    config, images, settings, engine = run.config, run.images, run.settings, run.engine
    dataset, X_train, y_train, X_test, y_test = (images.name, images.X_train, images.y_train,
                                                 images.X_test, images.y_test)
    out = pathlib.Path(out)
    Xtr, Xte = _tensor(X_train, "cpu", False), _tensor(X_test, "cpu", False)
    mean = Xtr.mean(dim=(0, 1, 2), keepdim=True)
    std = Xtr.std(dim=(0, 1, 2), keepdim=True).clamp_min(1e-6)
    data = ((Xtr - mean) / std, torch.from_numpy(y_train), (Xte - mean) / std,
            torch.from_numpy(y_test))
    train = TrainSettings(epochs=config.epochs, batch_size=config.batch_size, lr=config.lr)
    shape = X_train.shape[1:]

    def job(label, width, k, seed):
        def run(data):  # here or on a worker: the device is the process's own
            torch_device = resolve_device(device)
            Xtr, ytr, Xte, yte = (t.to(torch_device) for t in data)
            start = time.perf_counter()
            model = ConvNet(shape, config.channels, width, k, 10, seed)
            model = model.to(torch_device)
            fit_classifier(model, Xtr, ytr, train, seed=seed)
            acc = accuracy(model, Xte, yte)
            return {"train_accuracy": accuracy(model, Xtr, ytr), "test_accuracy": acc,
                    "test_error": 1.0 - acc,
                    "params": sum(p.numel() for p in model.parameters()),
                    "head_flops": model.head.flops_per_example(),
                    "device": str(torch_device), "wall_s": round(time.perf_counter() - start, 3)}
        return (f"cnn;width={width};k={k}", seed,
                {"dataset": dataset, "model_label": label, "width": width, "k": k,
                 "activated_units": k}, run)

    jobs = []
    for seed in config.seeds:
        for a in config.activated:
            jobs.append(job("CNN + dense", a, a, seed))
            for fraction in config.fractions:
                jobs.append(job(_dsm_label(fraction), int(round(a / fraction)), a, seed))
    reference, sizes = CONTROL_REFERENCE["cifar"], config.reference_activated()
    jobs += [job(reference, a, a, seed)  # the controls' extra sizes and seeds
             for seed in config.seeds + config.control_seeds for a in sizes
             if seed in config.control_seeds or a not in config.activated]
    frame = _run_rows(out, "cifar", settings, jobs, run.table, progress, data, engine)
    if rows_only:
        return frame
    runs = run_seeds(frame, config)  # claims, plot and tables: the run's seeds and sizes
    runs = runs[runs["activated_units"].isin(config.activated)] if len(runs) else runs
    claims = adjust_family(cifar_claims(runs, config)) + real_data_controls(  # Holm, controls
        "cifar", frame, reference, "activated_units", "test_error",
        "test error", budget=config.budget, regime=shared_regime(config),
        control_seeds=config.control_seeds)
    _write_claims(out, claims)
    _plot_cifar(runs, out / "cifar_fig5.png", config, images.title)
    _write_table(out, "Baykal et al. 2022 §5 CIFAR-10 (Fig. 5, Table 3): CNN + dense vs "
                 "CNN + DSM", config, runs, claims, _cifar_tables(runs), images)
    return frame


def _dsm_label(fraction: float) -> str:
    return f"CNN + DSM {fraction:.0%} sparse"


def cifar_claims(frame: pd.DataFrame, config: CifarConfig) -> list[Claim]:
    """Table 3's and Fig. 5's claim for each DSM fraction: CNN + DSM beats CNN + dense at
    equal activated units (lower test error at every a, paired across seeds), with the paper's
    own Table 3 judged by the same count."""
    claims = []
    paper = PAPER_TABLE3.set_index("activated units")
    for fraction in config.fractions:
        label = _dsm_label(fraction)
        claim = paired_claim(
            "cifar", f"{label} beats CNN + dense at equal activated units (\"DSM outperforms "
            f"dense models at the same number of activated units\", Baykal et al. 2022, §5 "
            f"CIFAR-10, Fig. 5, Table 3) [{config.dataset}, Adam {config.epochs} epochs]",
            frame, label, "CNN + dense", "activated_units", "test_error",
            "Baykal et al. 2022, §5 CIFAR-10, Fig. 5, Table 3", "test error",
            budget=config.budget, regime=shared_regime(config))
        if label in paper:
            wins = int((paper[label] > paper["CNN + dense"]).sum())
            claim = replace(claim, evidence=claim.evidence + (
                ". Paper's Table 3 (accuracy %): " + "; ".join(
                    f"a = {a}: {paper.loc[a, label]} vs {paper.loc[a, 'CNN + dense']}"
                    for a in paper.index)
                + f" — higher at {wins}/{len(paper)} (one run per cell, no interval)"))
        claims.append(claim)
    return claims


def _cifar_tables(frame: pd.DataFrame) -> list[str]:
    ours = _mean_sd(frame, "activated_units", "model_label", "test_accuracy")
    return ["Test accuracy (mean ± sd over seeds) by activated units:", "",
            ours.to_markdown(), "",
            "Baykal et al. 2022, Table 3 (CIFAR-10 test accuracy, %, one run per cell):", "",
            PAPER_TABLE3.to_markdown(index=False), ""]


def _plot_cifar(frame: pd.DataFrame, path: pathlib.Path, config, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.6))
    for label, rows in frame.groupby("model_label", sort=False):
        g = rows.groupby("activated_units")["test_accuracy"]
        ax.errorbar(g.mean().index, g.mean().values, yerr=g.sem().fillna(0).values,
                    marker="o", capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("activated units of the penultimate layer")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"CNN + dense vs CNN + DSM ({title}, Fig. 5 style)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
