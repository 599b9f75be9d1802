"""COMET §5.2.1, Fig. 4: 4-layer MLPs at N neurons a layer and sparsity p_k; COMET
against the standard model (N neurons, dense) and the smaller model (p_k·N)
(``experiments.papers.real_data``)."""

from __future__ import annotations

import pathlib
import time
from dataclasses import replace

import pandas as pd
import torch

from experiments.analysis.claims import Claim
from experiments.papers.real_data._configs import CONTROL_REFERENCE, CometImagesConfig
from experiments.papers.real_data._rows import (_holding_out, _mean_sd, _run_rows, _start,
                                                _tensor, _write_claims, _write_table, run_seeds)
from experiments.papers.real_data._verdicts import (adjust_family, paired_claim,
                                             real_data_controls, shared_regime)


@_holding_out
def run_comet_images(preset: str, out, data_dir=None, seeds=None, device: str = "auto",
                     progress: bool = True, force: bool = False, workers: int | None = None,
                     scheduler: str | None = None, rows_only: bool = False,
                     data: str | None = None, config: CometImagesConfig | None = None,
                     data_identity: dict | None = None) -> pd.DataFrame:
    """COMET §5.2.1, Fig. 4 (App. A.1): 4-layer MLPs (3 hidden ReLU layers of N neurons) on
    flattened images scaled to [0, 1]: COMET at each p_k against the standard model (N, dense)
    and the smaller model (round(p_k N), dense), test accuracy over seeds.

    Arguments and errors: as ``run_cifar`` ("paper" needs CIFAR-10 in ``data_dir``; the quick
    preset reads MNIST-5k by default).

    Returns:
        the rows of this run (model_label "COMET", "standard model" or "smaller model"; width
        N, p_k (1 for the standard model), activated_units per layer, params,
        train_accuracy, test_accuracy, test_error, …).
    """
    from experiments.kinds.image_models import (TrainSettings, accuracy, fit_classifier,
                                          four_layer_mlp)
    from experiments.runner.rows import resolve_device

    run = _start("comet_images", preset, out, data, data_dir, seeds, device, progress, force, workers,
                 scheduler, config=config, data_identity=data_identity)
    config, images, settings, engine = run.config, run.images, run.settings, run.engine
    dataset, X_train, y_train, X_test, y_test = (images.name, images.X_train, images.y_train,
                                                 images.X_test, images.y_test)
    out = pathlib.Path(out)
    data = (_tensor(X_train, "cpu", True), torch.from_numpy(y_train),
            _tensor(X_test, "cpu", True), torch.from_numpy(y_test))
    train = TrainSettings(epochs=config.epochs, batch_size=config.batch_size,
                          optimizer=config.optimizer, lr=config.lr)

    def job(label, width, p_k, smaller, seed):
        def run(data):  # here or on a worker: the device is the process's own
            torch_device = resolve_device(device)
            Xtr, ytr, Xte, yte = (t.to(torch_device) for t in data)
            start = time.perf_counter()
            model = four_layer_mlp(Xtr.shape[1], width, p_k, 10, seed, smaller=smaller,
                                   optimizer=config.optimizer, lr=config.lr).to(torch_device)
            fit_classifier(model, Xtr, ytr, train, seed=seed)
            acc = accuracy(model, Xte, yte)
            return {"train_accuracy": accuracy(model, Xtr, ytr), "test_accuracy": acc,
                    "test_error": 1.0 - acc, "activated_units": model.ks[0],
                    "layer_width": model.config.widths[0],
                    "params": sum(p.numel() for p in model.parameters()),
                    "device": str(torch_device), "wall_s": round(time.perf_counter() - start, 3)}
        key = f"{label};N={width};p_k={p_k:g}"
        return (key, seed, {"dataset": dataset, "model_label": label, "width": width,
                            "p_k": p_k}, run)

    jobs = []
    for seed in config.seeds:
        for width in config.widths:
            jobs.append(job("standard model", width, 1.0, False, seed))
            for p_k in config.p_ks:
                jobs.append(job("COMET", width, p_k, False, seed))
                jobs.append(job("smaller model", width, p_k, True, seed))
    jobs += [job(CONTROL_REFERENCE["comet_images"], width, 1.0, False, seed)  # the controls'
             for seed in config.seeds + config.control_seeds  # extra sizes and seeds
             for width in config.reference_widths()
             if seed in config.control_seeds or width not in config.widths]
    frame = _run_rows(out, "comet_images", settings, jobs, run.table, progress, data, engine)
    if rows_only:
        return frame
    runs = run_seeds(frame, config)  # claims, plot and tables: the run's seeds and sizes
    runs = runs[runs["width"].isin(config.widths)] if len(runs) else runs
    claims = adjust_family(comet_claims(runs, config)) + real_data_controls(  # Holm, controls
        "comet_images", frame, CONTROL_REFERENCE["comet_images"], "width", "test_error",
        "test error", budget=config.budget, regime=shared_regime(config),
        control_seeds=config.control_seeds)
    _write_claims(out, claims)
    _plot_comet(runs, out / "comet_fig4.png", config, images.title)
    _write_table(out, "COMET §5.2.1, Fig. 4: 4-layer MLPs by neurons and sparsity", config,
                 runs, claims, _comet_tables(runs), images)
    return frame


def comet_claims(frame: pd.DataFrame, config: CometImagesConfig) -> list[Claim]:
    """COMET §5.2.1's claims, paired across seeds:

    * per p_k: COMET beats the smaller model (round(p_k N) neurons, equal activated units) at
      every N;
    * "as network capacity increases with more neurons, the COMET model emerges as the top
      performer": COMET's advantage over the standard model (accuracy difference) is larger
      at the largest N than at the smallest, at every p_k;
    * at the largest N, COMET beats the standard model at every p_k.

    The claim texts name no paper: each claim's record (``experiments.analysis.claims._records``)
    carries its quote and source.
    """
    budget = config.budget
    regime = shared_regime(config)
    tag = f" [{config.dataset}, {config.optimizer} {config.epochs} epochs]"
    source = "COMET §5.2.1, Fig. 4 (App. A.1)"
    none = ". The paper gives Fig. 4 as curves; our copy has no numbers to set beside ours"
    claims = []
    for p_k in config.p_ks:
        rows = frame[(frame["model_label"] != "standard model") & (frame["p_k"] == p_k)]
        c = paired_claim("comet_images", f"COMET beats the smaller model (p_k·N neurons, equal "
                         f"activated units) at p_k = {p_k:g}, every N{tag}", rows,
                         "COMET", "smaller model", "width", "test_error", source, "test error",
                         budget=budget, regime=regime)
        claims.append(replace(c, evidence=c.evidence + none))
    # COMET's advantage over the standard model, per (p_k, N, seed): negative = COMET better
    comet = frame[frame["model_label"] == "COMET"].set_index(["width", "seed", "p_k"])
    standard = frame[frame["model_label"] == "standard model"].set_index(["width", "seed"])
    gap = comet["test_error"] - standard["test_error"].reindex(
        comet.index.droplevel("p_k")).to_numpy()
    gap = gap.rename("gap").reset_index()
    widths = sorted(gap["width"].unique())
    if len(widths) >= 2:
        low, high = widths[0], widths[-1]
        ends = pd.concat([gap[gap["width"] == low].assign(model_label=f"N = {low:g}"),
                          gap[gap["width"] == high].assign(model_label=f"N = {high:g}")])
        c = paired_claim("comet_images", f"COMET's advantage over the standard model grows with "
                         f"capacity: (error COMET − error standard) lower at N = {high:g} than "
                         f"at N = {low:g}, at every p_k{tag}", ends,
                         f"N = {high:g}", f"N = {low:g}", "p_k", "gap", source,
                         "error gap (COMET − standard)", budget=budget, regime=regime)
        claims.append(replace(c, evidence=c.evidence + none))
    top = frame[frame["width"] == max(config.widths)]
    top = pd.concat([top[top["model_label"] == "COMET"],
                     *[top[top["model_label"] == "standard model"].assign(p_k=p)
                       for p in config.p_ks]])
    c = paired_claim("comet_images", f"at the largest N = {max(config.widths):g}, COMET beats "
                     f"the standard model at every p_k{tag}", top, "COMET",
                     "standard model", "p_k", "test_error", source, "test error",
                     budget=budget, regime=regime)
    claims.append(replace(c, evidence=c.evidence + none))
    return claims


def _comet_tables(frame: pd.DataFrame) -> list[str]:
    labelled = frame.assign(model=[f"{m}" + ("" if m == "standard model" else f" p_k={p:g}")
                                   for m, p in zip(frame["model_label"], frame["p_k"])])
    return ["Test accuracy (mean ± sd over seeds) by neurons per layer N:", "",
            _mean_sd(labelled, "width", "model", "test_accuracy").T.to_markdown(), ""]


def _plot_comet(frame: pd.DataFrame, path: pathlib.Path, config, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator, ScalarFormatter

    fig, axes = plt.subplots(1, len(config.p_ks), figsize=(3.6 * len(config.p_ks), 3.4),
                             squeeze=False)
    standard = frame[frame["model_label"] == "standard model"].groupby("width")["test_accuracy"]
    for ax, p_k in zip(axes[0], config.p_ks):
        ax.errorbar(standard.mean().index, standard.mean().values,
                    yerr=standard.sem().fillna(0).values, marker="s", capsize=3,
                    label="standard model")
        for label in ("COMET", "smaller model"):
            g = frame[(frame["model_label"] == label) & (frame["p_k"] == p_k)].groupby(
                "width")["test_accuracy"]
            ax.errorbar(g.mean().index, g.mean().values, yerr=g.sem().fillna(0).values,
                        marker="o", capsize=3, label=label)
        ax.set_xscale("log")
        # ticks at the widths run, plain numbers: log minor labels overlap ("3×4×10¹6×10¹")
        ax.xaxis.set_major_locator(FixedLocator(sorted(config.widths)))
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("neurons per layer N")
        ax.set_title(f"p_k = {p_k:g}", fontsize=9)
    axes[0, 0].set_ylabel(f"test accuracy ({title})")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("4-layer MLPs, COMET vs standard vs smaller (Fig. 4 style)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
