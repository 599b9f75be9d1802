"""Bricken et al. 2023, §5, Table 1, Fig. 3, App. E.1 / F.3: class-incremental Split
data, every model of ``experiments.continual.MODELS`` (``experiments.real_data``)."""

from __future__ import annotations

import json
import pathlib
from dataclasses import replace

import numpy as np
import pandas as pd

from experiments.claims import Claim
from experiments.real_data._configs import (PRESETS, ContinualConfig, _with_matched,
                                            experiment_config)
from experiments.real_data._rows import (_data, _engine, _fingerprint, _flat, _holding_out,
                                         _prepare, _run_rows, _seeds, _write_claims, _write_config,
                                         _write_table)
from experiments.real_data._verdicts import paired_claim
from routing.validation import check_choice

#: Bricken et al. 2023: final validation accuracy of the 1K-neuron models where the paper
#: gives it (Table 7 Split MNIST, pixels, no pretraining; Table 5 Split CIFAR-10 embeddings;
#: Table 2 ablations, CIFAR-10 embeddings, k = 10).
PAPER_BRICKEN = pd.DataFrame([
    ("SDMLP", 0.53, 0.63, 0.63), ("SDMLP (mask)", None, None, 0.38),
    ("Top-K", 0.22, 0.29, None), ("ReLU MLP", 0.21, None, None),
    ("EWC (ReLU MLP)", 0.61, 0.67, None), (("oracle (ReLU MLP, joint)"), 0.98, 0.93, None)],
    columns=["model", "Split MNIST (Table 7, k=10)", "Split CIFAR-10 (Table 5, k=10)",
             "ablations (Table 2)"])


@_holding_out
def run_continual(preset: str, out, data_dir=None, seeds=None, device: str = "auto",
                  progress: bool = True, force: bool = False, workers: int | None = None,
                  scheduler: str | None = None, rows_only: bool = False) -> pd.DataFrame:
    """Bricken et al. 2023, §5 (Table 1, Fig. 3), App. E.1 (pixels), F.3 (Split MNIST):
    class-incremental continual learning, every model of ``experiments.continual.MODELS`` in
    the same harness (``run_continual_model``), the accuracy matrix, final and average
    accuracy, forgetting and dead neurons per task, a Fig. 3-style plot and verdicts on the
    paper's three claims (SDMLP forgets less and ends higher; subtraction beats masking;
    fewer dead neurons). Every model's size is matched to the ReLU MLP's trainable parameters
    before training (``ContinualConfig.matched``, written to config.json and table.md).

    Arguments and errors: as ``run_cifar``; with ``data_dir`` the data are Split MNIST (IDX
    files there) or Split CIFAR-10 pixels (binary files there).

    Returns:
        the rows of this run: one per model and seed (model_label, final_accuracy,
        average_accuracy, forgetting, dead_fraction, acc_matrix / dead_per_task / curve as
        JSON, params, relu_mlp_params, params_rel_diff, params_matched, size, sizing, …).
    """
    from experiments.continual import ContinualSettings, run_continual_model
    from experiments.sweep import resolve_device, run_device

    check_choice(preset, "preset", PRESETS)
    engine = _engine(workers, scheduler, device)
    torch_device = run_device(device, scheduler)
    dataset, X_train, y_train, X_test, y_test = _data(preset, data_dir)
    config = _seeds(experiment_config("continual", preset, dataset), seeds)
    d_in = int(np.prod(X_train.shape[1:]))
    if config.d_in != d_in:  # files of another image size than the data set's own
        config = _with_matched(config, d_in)
    settings = _fingerprint(config)
    out = pathlib.Path(out)
    table = _prepare(out, "continual", settings, force)
    _write_config(out, "continual", config, settings, torch_device, data_dir, len(y_train),
                  len(y_test))
    continual = ContinualSettings(**config.continual)
    data = _flat(X_train, y_train, X_test, y_test)

    def job(label, seed):
        def run(data):  # here or on a worker: the device is the process's own
            torch_device = resolve_device(device)
            result = run_continual_model(label, data, continual, seed, torch_device,
                                         matched=config.matched[label])
            return {**result, "error": 1.0 - result["final_accuracy"],
                    "device": str(torch_device)}
        return (label, seed, {"dataset": dataset, "model_label": label}, run)

    jobs = [job(label, seed) for seed in config.seeds for label in config.models]
    frame = _run_rows(out, "continual", settings, jobs, table, progress, data, engine)
    if rows_only:
        return frame
    claims = continual_claims(frame, config)
    _write_claims(out, claims)
    _plot_continual(frame, out / "continual_fig3.png", config)
    _write_table(out, "Bricken et al. 2023 §5: class-incremental continual learning (Table 1, "
                 "Fig. 3; App. E.1, F.3)", config, frame, claims,
                 _continual_tables(frame, config))
    return frame


def _per_task(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Long rows (model_label, seed, task, value) from a JSON-list column."""
    rows = []
    for r in frame.itertuples(index=False):
        for t, v in enumerate(json.loads(getattr(r, column)), start=1):
            rows.append({"model_label": r.model_label, "seed": r.seed, "task": t, column: v})
    return pd.DataFrame(rows)


def continual_claims(frame: pd.DataFrame, config: ContinualConfig) -> list[Claim]:
    """Bricken et al.'s three claims on the rows, each paired across seeds:

    1. SDMLP ends with a higher accuracy than the ReLU MLP, EWC and Top-K (§5, Table 1/7),
       and forgets less than the ReLU MLP (Fig. 20);
    2. subtraction beats masking in continual learning (Table 2, App. B.3, Fig. 10a);
    3. subtraction leaves fewer dead neurons than masking across tasks (Fig. 10c), and SDMLP
       fewer than Top-K (App. H: Top-K had 55 % dead neurons).
    """
    budget = config.budget
    frame = frame.assign(final="final")
    tag = f" [{config.dataset}, {config.continual['epochs_per_task']} epochs a task]"
    paper = PAPER_BRICKEN.set_index("model")
    mnist = "Split MNIST (Table 7, k=10)"

    def said(*labels):
        values = [f"{label} {paper.loc[label, mnist]:.2f}" for label in labels
                  if label in paper.index and pd.notna(paper.loc[label, mnist])]
        return f". Paper (Split MNIST, Table 7, 1K neurons): {', '.join(values)}" if values \
            else ""

    claims = []
    for other, source in (("ReLU MLP", "§5, Table 7"), ("EWC (ReLU MLP)", "§5, Tables 5 and 7"),
                          ("Top-K", "§5, Tables 5 and 7")):
        c = paired_claim("continual", f"SDMLP ends with a higher accuracy than {other} "
                         f"(class-incremental; Bricken et al. 2023, {source}){tag}", frame,
                         "SDMLP", other, "final", "error", f"Bricken et al. 2023, {source}",
                         "test error after the last task", budget=budget)
        claims.append(replace(c, evidence=c.evidence + said("SDMLP", other)))
    claims.append(paired_claim(
        "continual", f"SDMLP forgets less than the ReLU MLP (Bricken et al. 2023, §5, Fig. 20: "
        f"'SDMLP gradually forgets … ReLU catastrophically forgets'){tag}", frame, "SDMLP",
        "ReLU MLP", "final", "forgetting", "Bricken et al. 2023, §5, App. F.1 Fig. 20",
        "forgetting", budget=budget))
    c = paired_claim("continual", f"subtraction beats masking in continual learning (SDMLP vs "
                     f"SDMLP (mask); Bricken et al. 2023, Table 2, App. B.3, Fig. 10a){tag}",
                     frame, "SDMLP", "SDMLP (mask)", "final", "error",
                     "Bricken et al. 2023, Table 2, App. B.3, Fig. 10a",
                     "test error after the last task", budget=budget)
    claims.append(replace(c, evidence=c.evidence + ". Paper (Table 2, CIFAR-10 embeddings, "
                          "k = 10): Linear Subtract 0.63 vs Linear Mask 0.38"))
    dead = _per_task(frame, "dead_per_task")
    for other, source in (("SDMLP (mask)", "App. B.3, Fig. 10c"), ("Top-K", "App. H")):
        claims.append(paired_claim(
            "continual", f"SDMLP has fewer dead neurons than {other} across tasks (Bricken et "
            f"al. 2023, {source}){tag}", dead, "SDMLP", other, "task", "dead_per_task",
            f"Bricken et al. 2023, {source}", "dead fraction", budget=budget))
    return claims


def _continual_tables(frame: pd.DataFrame, config: ContinualConfig) -> list[str]:
    return _matched_table(config) + _continual_summary(frame)


def _matched_table(config: ContinualConfig) -> list[str]:
    """The "matched parameters" note and, per model, its size, trainable parameters, the
    ReLU MLP's, the relative difference and how the size was chosen."""
    rows = [{"model": label, "size": ", ".join(f"{k} = {v}" for k, v in m["size"].items()),
             "params": f"{m['params']:,}", "ReLU MLP params": f"{m['reference_params']:,}",
             "Δ params": f"{m['relative_difference']:+.2%}",
             "matched": "yes" if m["matched"] else "**no**", "how the size was chosen": m["rule"]}
            for label, m in (config.matched or {}).items()]
    if not rows:
        return []
    return [f"Matched parameters: {config.parameter_matching}.", "",
            pd.DataFrame(rows).to_markdown(index=False), ""]


def _continual_summary(frame: pd.DataFrame) -> list[str]:
    summary = frame.groupby("model_label", sort=False).agg(
        final_accuracy=("final_accuracy", "mean"), sd=("final_accuracy", "std"),
        average_accuracy=("average_accuracy", "mean"), forgetting=("forgetting", "mean"),
        dead_after_last=("dead_fraction", "mean"), params=("params", "first"),
        activated=("activated_units", "first"), units=("n_units", "first"),
        wall_s=("wall_s", "mean"))
    for column in ("params", "activated", "units"):
        summary[column] = summary[column].astype(int)
    return ["Means over seeds (final accuracy: whole test set after the last task; forgetting: "
            "Chaudhry et al. 2018; dead: share of hidden units — for MoE layers, experts or "
            "value slots — active for no test input after the last task):", "",
            summary.to_markdown(floatfmt=("", ".3f", ".3f", ".3f", ".3f", ".3f", ".0f",
                                          ".0f", ".0f", ".2f")), "",
            "Bricken et al. 2023, final validation accuracy, 1K neurons (the paper's numbers; "
            "blank where it gives none):", "",
            PAPER_BRICKEN.to_markdown(index=False, missingval=""), ""]


def _plot_continual(frame: pd.DataFrame, path: pathlib.Path, config) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8))
    colours = plt.get_cmap("tab20").colors
    for i, (label, rows) in enumerate(frame.groupby("model_label", sort=False)):
        style = dict(color="black", ls="--") if "oracle" in label else dict(
            color=colours[2 * i % 20])
        curves = [np.array(json.loads(c), dtype=float) for c in rows["curve"]]
        curves = [c for c in curves if c.size]
        if curves:
            n = min(len(c) for c in curves)
            stack = np.stack([c[:n] for c in curves])  # (seeds, n, 2)
            mean = stack[:, :, 1].mean(0)
            sem = stack[:, :, 1].std(0, ddof=1) / np.sqrt(len(stack)) if len(stack) > 1 else 0
            ax.plot(stack[0, :, 0], mean, label=label, lw=1.4, **style)
            ax.fill_between(stack[0, :, 0], mean - sem, mean + sem, alpha=0.2,
                            color=style["color"])
        dead = np.array([json.loads(d) for d in rows["dead_per_task"]], dtype=float)
        bx.plot(np.arange(1, dead.shape[1] + 1), dead.mean(0), marker="o", label=label,
                **style)
    ax.set_xlabel("tasks trained")
    ax.set_ylabel("test accuracy, all classes")
    ax.set_title(f"Split {config.dataset}, class-incremental (Fig. 3 style)", fontsize=9)
    bx.set_xlabel("after task")
    bx.set_ylabel("dead fraction of hidden units")
    bx.set_title("dead neurons per task (Fig. 10c style)", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
