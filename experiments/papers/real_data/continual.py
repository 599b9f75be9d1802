"""Bricken et al. 2023, §5, Table 1, Fig. 3, App. E.1 / F.3: class-incremental Split
data, every model of ``experiments.kinds.continual_harness.MODELS`` (``experiments.papers.real_data``).

The claims pick their rows by the router's registry name and the harness's options (the
``model``, ``ewc`` and ``joint`` columns: ``label_of``), not by display label."""

from __future__ import annotations

import json
import pathlib
from dataclasses import replace

import numpy as np
import pandas as pd

from experiments.analysis.claims import Claim
from experiments.papers.real_data._configs import CONTROL_REFERENCE, ContinualConfig
from experiments.papers.real_data._rows import (_flat, _holding_out, _run_rows, _start,
                                                _write_claims, _write_table, run_seeds)
from experiments.papers.real_data._verdicts import (adjust_family, paired_claim,
                                             real_data_controls, training_regime)

#: Bricken et al. 2023: final validation accuracy of the 1K-neuron models where the paper
#: gives it, one row per (model, k) of its tables (k: active neurons, blank for a dense model;
#: Table 7 Split MNIST, pixels, no pretraining; Table 5 Split CIFAR-10 embeddings; Table 2
#: ablations, CIFAR-10 embeddings, k = 10). MAS is not a model of this harness: its rows are
#: there because the paper's text ranks SDMLP against "the parameter importance
#: regularization methods", EWC and MAS.
PAPER_BRICKEN = pd.DataFrame([
    ("SDMLP", "1", 0.69, 0.70, None), ("SDMLP", "10", 0.53, 0.63, 0.63),
    ("SDMLP (mask)", "10", None, None, 0.38), ("SDMLP + EWC", "10", 0.83, 0.83, None),
    ("Top-K", "10", 0.22, 0.29, None), ("ReLU MLP", "", 0.21, None, None),
    ("EWC (ReLU MLP)", "", 0.61, 0.67, None), ("MAS (not run here)", "", 0.49, 0.69, None),
    ("oracle (ReLU MLP, joint)", "", 0.98, 0.93, None)],
    columns=["model", "k", "Split MNIST (Table 7)", "Split CIFAR-10 (Table 5)",
             "ablations (Table 2)"])

#: The column of ``PAPER_BRICKEN`` the continual claims cite (Split MNIST, Table 7).
TABLE7 = "Split MNIST (Table 7)"


@_holding_out
def run_continual(preset: str, out, data_dir=None, seeds=None, device: str = "auto",
                  progress: bool = True, force: bool = False, workers: int | None = None,
                  scheduler: str | None = None, rows_only: bool = False,
                  data: str | None = None, calibration=None,
                  config: ContinualConfig | None = None,
                  data_identity: dict | None = None) -> pd.DataFrame:
    """Bricken et al. 2023, §5 (Table 1, Fig. 3), App. E.1 (pixels), F.3 (Split MNIST):
    class-incremental continual learning, every model of ``experiments.kinds.continual_harness.MODELS`` in
    the same harness (``run_continual_model``), the accuracy matrix, final and average
    accuracy, forgetting and dead neurons per task, a Fig. 3-style plot and verdicts on the
    paper's three claims (SDMLP forgets less and ends higher; subtraction beats masking;
    fewer dead neurons). Every model's size is matched to the ReLU MLP's trainable parameters
    before training (``ContinualConfig.matched``, written to config.json and table.md).

    Arguments and errors: as ``run_cifar``; the quick preset reads MNIST-5k by default
    (Split MNIST-5k); with ``data_dir`` the data are Split MNIST (IDX files there) or Split
    CIFAR-10 pixels (binary files there). ``calibration``: a file or dict of learning rates
    and λs replacing the preset's calibrated ones
    (``experiments.papers.real_data.read_calibration``; recorded in config.json).
    ``config`` (a ``ContinualConfig``, exclusive with ``calibration``) and ``data_identity``:
    as ``run_cifar``'s.

    Besides the files of ``run_cifar`` it writes ``accuracy_matrix.csv`` (every R[i, j]:
    model, seed, after_task i, task j, accuracy) and ``continual_accuracy_matrices.png``
    (one heatmap of the mean R per model).

    Returns:
        the rows of this run: one per model and seed (model_label, final_accuracy,
        average_accuracy, forgetting, learning_accuracy, dead_fraction, acc_matrix /
        dead_per_task / curve as JSON, params, relu_mlp_params, params_rel_diff,
        params_matched, size, sizing, …).
    """
    from experiments.kinds.continual_harness import MODELS, ContinualSettings, run_continual_model
    from experiments.kinds.registry import model_kind_names, register_model_kind
    from experiments.runner.rows import resolve_device

    run = _start("continual", preset, out, data, data_dir, seeds, device, progress, force,
                 workers, scheduler, calibration, config, data_identity)
    config, images, settings, engine = run.config, run.images, run.settings, run.engine
    dataset = images.name
    out = pathlib.Path(out)
    continual = ContinualSettings(**config.continual)
    data = _flat(images.X_train, images.y_train, images.X_test, images.y_test)

    def job(key, seed):
        entry = MODELS[key]  # a label, or a router's registry name
        router = entry.router

        def train(data):  # here or on a worker: the device is the process's own
            if entry.kind not in model_kind_names():  # a user's router, on a worker
                register_model_kind(router, replace=True)
            torch_device = resolve_device(device)
            result = run_continual_model(entry, data, continual, seed, torch_device,
                                         matched=config.matched[key])
            return {**result, "error": 1.0 - result["final_accuracy"],
                    "device": str(torch_device)}
        return (key, seed, {"dataset": dataset, "model_label": entry.label}, train)

    jobs = [job(key, seed) for seed in config.seeds for key in config.models]
    jobs += [job(CONTROL_REFERENCE["continual"], seed)  # the controls' extra seeds
             for seed in config.control_seeds]
    frame = _with_names(_run_rows(out, "continual", settings, jobs, run.table, progress, data,
                                  engine))
    if rows_only:
        return frame
    runs = run_seeds(frame, config)  # claims, plots and tables: the run's seeds alone
    claims = adjust_family(continual_claims(runs, config)) + real_data_controls(  # Holm,
        "continual", frame.assign(final="final"), label_of(frame, "dense_mlp"),  # controls
        "final", "error", "test error after the last task", budget=config.budget,
        positive=label_of(frame, "dense_mlp", joint=True),
        training=f"{continual.epochs_per_task} epochs a task, batch {continual.batch_size}",
        control_seeds=config.control_seeds)
    _write_claims(out, claims)
    _write_matrix(runs, out / "accuracy_matrix.csv")
    _plot_continual(runs, out / "continual_fig3.png", images.title)
    _plot_matrices(runs, out / "continual_accuracy_matrices.png", images.title)
    _write_table(out, "Bricken et al. 2023 §5: class-incremental continual learning (Table 1, "
                 "Fig. 3; App. E.1, F.3)", config, runs, claims,
                 _continual_tables(runs, config), images)
    return frame


#: The columns naming a row's model: the router's registry name and the harness's options.
NAME_COLUMNS = ("model", "ewc", "joint")


def _with_names(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``NAME_COLUMNS`` filled where a row lacks them (rows written before
    they were recorded), from the harness entry of its ``model_label``."""
    from experiments.kinds.continual_harness import MODELS

    frame = frame.copy()
    for column in NAME_COLUMNS:
        if column not in frame:
            frame[column] = None
    for i in frame.index[frame[list(NAME_COLUMNS)].isna().any(axis=1)]:
        entry = MODELS.get(frame.at[i, "model_label"])
        if entry is not None:
            for column in NAME_COLUMNS:
                frame.at[i, column] = getattr(entry, "kind" if column == "model" else column)
    for column in ("ewc", "joint"):
        frame[column] = frame[column].map(lambda v: v if pd.isna(v) else _truth(v))
    return frame


def _truth(value) -> bool:
    """A bool read back from results.csv ("True"/"False") or a frame (bool, numpy bool)."""
    return value.strip().lower() == "true" if isinstance(value, str) else bool(value)


def label_of(frame: pd.DataFrame, model: str, ewc: bool = False, joint: bool = False) -> str:
    """The ``model_label`` of ``frame``'s rows of the router ``model`` (its registry name:
    "sdmlp", "dense_mlp", …) run with the harness options ``ewc`` and ``joint``, so that a
    claim names its models by registry name; without such a row, the harness entry's label
    (a claim on it then reads *not tested*), else ``model`` itself.

    Raises:
        ValueError: two labels of ``frame`` are the same model and options (ambiguous);
            ``model`` not a string, ``ewc`` or ``joint`` not a bool.
    """
    from experiments.kinds.continual_harness import MODELS
    from routing.validation import check_bool

    if not isinstance(model, str):
        raise ValueError(f"model must be a router's registry name (a string), got {model!r}")
    ewc, joint = check_bool(ewc, "ewc"), check_bool(joint, "joint")
    rows = _with_names(frame) if len(frame) else frame
    if len(rows):
        rows = rows[(rows["model"] == model) & (rows["ewc"] == ewc) & (rows["joint"] == joint)]
    labels = list(dict.fromkeys(rows["model_label"])) if len(rows) else []
    if len(labels) > 1:
        raise ValueError(f"frame has rows of {len(labels)} labels for model {model!r} with "
                         f"ewc={ewc}, joint={joint}: {labels}; the claims need one")
    if labels:
        return labels[0]
    for entry in MODELS.values():
        if (entry.kind, entry.ewc, entry.joint) == (model, ewc, joint):
            return entry.label
    return model


def _per_task(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Long rows (model_label, seed, task, value) from a JSON-list column."""
    rows = []
    for r in frame.itertuples(index=False):
        for t, v in enumerate(json.loads(getattr(r, column)), start=1):
            rows.append({"model_label": r.model_label, "seed": r.seed, "task": t, column: v})
    return pd.DataFrame(rows)


def table7_rows(*labels: str) -> str:
    """The rows of Bricken et al. 2023's Table 7 (Split MNIST, 1K neurons; ``PAPER_BRICKEN``)
    of the models ``labels``, each with its k where the table gives one: e.g. "SDMLP k = 1
    0.69, SDMLP k = 10 0.53, EWC (ReLU MLP) 0.61" ("" when none of them has a row).

    Raises:
        TypeError: a label that is not a string.
    """
    parts = []
    for label in labels:
        if not isinstance(label, str):
            raise TypeError(f"labels must be model labels (strings), got {label!r}")
        for r in PAPER_BRICKEN[PAPER_BRICKEN["model"] == label].itertuples(index=False):
            value = r[PAPER_BRICKEN.columns.get_loc(TABLE7)]
            if pd.notna(value):
                parts.append(f"{label}{f' k = {r.k}' if r.k else ''} {value:.2f}")
    return ", ".join(parts)


def continual_claims(frame: pd.DataFrame, config: ContinualConfig) -> list[Claim]:
    """Bricken et al.'s three claims on the rows, each paired across seeds, each saying which
    comparison it tests at which k (the preset's ``k``: 4 at tiny, 8 at quick, the paper's
    10 at paper) and citing Table 7's rows (Split MNIST, 1K neurons) in its evidence; the
    source and the quote come from the claim's record (``experiments.analysis.claims._records``):

    1. SDMLP ends with a higher accuracy than the ReLU MLP and Top-K (Table 7: at k = 1 and
       k = 10 alike) and than EWC (App. F.3's text ranks SDMLP above the regularisation
       methods; its Table 7 agrees at k = 1, 0.69 against 0.61, and not at k = 10, 0.53:
       the claim says so), and forgets less than the ReLU MLP (Fig. 20);
    2. subtraction beats masking in continual learning (Table 2, App. B.3, Fig. 10a);
    3. subtraction leaves fewer dead neurons than masking across tasks (Fig. 10c), and SDMLP
       fewer than Top-K (App. H: Top-K had 55 % dead neurons).

    The regime column names each compared model's optimiser and rate
    (``training_regime``), the epochs a task and the batch size.
    """
    budget = config.budget
    frame = _with_names(frame).assign(final="final")
    # the rows by registry name and harness options; the texts keep the paper's names
    sdmlp, relu, ewc = (label_of(frame, "sdmlp"), label_of(frame, "dense_mlp"),
                        label_of(frame, "dense_mlp", ewc=True))
    topk, mask = label_of(frame, "topk_mlp"), label_of(frame, "sdmlp_mask")
    s = config.continual
    k = s["k"]
    tag = f" [{config.dataset}, {s['epochs_per_task']} epochs a task]"
    common = f"{s['epochs_per_task']} epochs a task, batch {s['batch_size']}"
    table7 = "Paper (Table 7, Split MNIST, 1K neurons): "

    def regime(*labels):
        return training_regime(frame, labels, common)

    def versus(other, text, paper_labels):
        c = paired_claim("continual", text + tag, frame, sdmlp, other, "final", "error",
                         "Bricken et al. 2023, App. F.3, Table 7",
                         "test error after the last task", budget=budget,
                         regime=regime(sdmlp, other))
        return replace(c, evidence=c.evidence + ". " + table7 + table7_rows(*paper_labels))

    claims = [
        versus(relu, f"SDMLP (k = {k}) ends with a higher accuracy than ReLU MLP after "
               f"the last task; Table 7 has SDMLP above at k = 1 and at k = 10",
               ("SDMLP", "ReLU MLP")),
        versus(ewc, f"SDMLP (k = {k}) ends with a higher accuracy than EWC (ReLU "
               f"MLP) after the last task, as the paper's text ranks them; its Table 7 "
               f"disagrees at k = 10 (SDMLP 0.53 < EWC 0.61) and agrees only at k = 1 (0.69)",
               ("SDMLP", "EWC (ReLU MLP)", "MAS (not run here)")),
        versus(topk, f"SDMLP (k = {k}) ends with a higher accuracy than Top-K (k = {k}) "
               f"after the last task; Table 7 has SDMLP above at k = 1 and at k = 10 (Top-K "
               f"at k = 10)", ("SDMLP", "Top-K")),
    ]
    claims.append(paired_claim(
        "continual", f"SDMLP (k = {k}) forgets less than ReLU MLP across the tasks (the "
        f"paper's Fig. 20 shows it on Split CIFAR-10, no table row){tag}", frame, sdmlp,
        relu, "final", "forgetting", "Bricken et al. 2023, App. F.1, Fig. 20",
        "forgetting", budget=budget, regime=regime(sdmlp, relu)))
    c = paired_claim("continual", f"subtraction beats masking in continual learning: SDMLP vs "
                     f"SDMLP (mask), both at k = {k} (the paper's Table 2: k = 10, CIFAR-10 "
                     f"embeddings){tag}", frame, sdmlp, mask, "final", "error",
                     "Bricken et al. 2023, Table 2, App. B.3, Fig. 10a",
                     "test error after the last task", budget=budget,
                     regime=regime(sdmlp, mask))
    claims.append(replace(c, evidence=c.evidence + ". Paper (Table 2, CIFAR-10 embeddings, "
                          "k = 10): Linear Subtract 0.63 vs Linear Mask 0.38"))
    dead = _per_task(frame, "dead_per_task")
    for other, name, source in ((mask, "SDMLP (mask)", "App. B.3, Fig. 10c"),
                                (topk, "Top-K", "App. H")):
        claims.append(paired_claim(
            "continual", f"SDMLP has fewer dead neurons than {name} across tasks, both at "
            f"k = {k}{tag}", dead, sdmlp, other, "task", "dead_per_task",
            f"Bricken et al. 2023, {source}", "dead fraction", budget=budget,
            regime=regime(sdmlp, other)))
    return claims


def _continual_tables(frame: pd.DataFrame, config: ContinualConfig) -> list[str]:
    return _matched_table(config) + _continual_summary(frame, config.continual["k"])


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


def _continual_summary(frame: pd.DataFrame, k: int) -> list[str]:
    summary = frame.groupby("model_label", sort=False).agg(
        final_accuracy=("final_accuracy", "mean"), sd=("final_accuracy", "std"),
        average_accuracy=("average_accuracy", "mean"),
        learning_accuracy=("learning_accuracy", "mean"), forgetting=("forgetting", "mean"),
        dead_after_last=("dead_fraction", "mean"), params=("params", "first"),
        activated=("activated_units", "first"), units=("n_units", "first"),
        wall_s=("wall_s", "mean"))
    for column in ("params", "activated", "units"):
        summary[column] = summary[column].astype(int)
    paper = PAPER_BRICKEN.astype(object).where(PAPER_BRICKEN.notna(), "")
    return ["Means over seeds (final accuracy: whole test set after the last task; learning "
            "accuracy: each task's test accuracy right after training on it, mean over tasks — "
            "a model that stops learning has a low one however little it forgets; forgetting: "
            "Chaudhry et al. 2018; dead: share of hidden units — for MoE layers, experts or "
            "value slots — active for no test input after the last task). The accuracy matrix "
            "R[i, j] of every model and seed is in accuracy_matrix.csv and drawn in "
            "continual_accuracy_matrices.png:", "",
            summary.to_markdown(floatfmt=("", ".3f", ".3f", ".3f", ".3f", ".3f", ".3f", ".0f",
                                          ".0f", ".0f", ".2f")), "",
            "Bricken et al. 2023, final validation accuracy, 1K neurons (the paper's numbers; "
            "blank where it gives none; k: active neurons, blank for a dense model). Its table "
            "and text disagree: App. F.3's text ranks SDMLP above the regularisation methods "
            "(EWC, MAS), while Table 7 has EWC (0.61) above SDMLP at k = 10 (0.53) and below "
            "it only at k = 1 (0.69); this run's SDMLP is at k = "
            f"{k}:", "",
            paper.to_markdown(index=False, floatfmt=".2f"), ""]



def _matrix_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Long rows of every accuracy matrix: model_label, seed, after_task i, task j (both from
    1), the task's classes and R[i, j] (empty where not measured: the oracle's rows before
    its one joint training)."""
    rows = []
    for r in frame.itertuples(index=False):
        R = np.array(json.loads(r.acc_matrix), dtype=float)
        tasks = json.loads(r.tasks)
        for i in range(R.shape[0]):
            for j in range(R.shape[1]):
                rows.append({"model_label": r.model_label, "seed": r.seed, "after_task": i + 1,
                             "task": j + 1, "classes": " ".join(map(str, tasks[j])),
                             "accuracy": R[i, j]})
    return pd.DataFrame(rows, columns=["model_label", "seed", "after_task", "task", "classes",
                                       "accuracy"])


def _write_matrix(frame: pd.DataFrame, path: pathlib.Path) -> None:
    from experiments.runner.output_folder import write_frame

    write_frame(_matrix_rows(frame), path)


def _plot_matrices(frame: pd.DataFrame, path: pathlib.Path, title: str) -> None:
    """One heatmap per model of its accuracy matrix R (mean over seeds): row i after task i,
    column j task j; the diagonal is the learning accuracy, the last row the final
    per-task accuracy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    long = _matrix_rows(frame)
    labels = list(dict.fromkeys(frame["model_label"]))
    ncols = min(4, len(labels))
    nrows = -(-len(labels) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.7 * ncols, 2.6 * nrows + 0.6),
                             squeeze=False)
    image = None
    for ax, label in zip(axes.flat, labels):
        mean = long[long["model_label"] == label].pivot_table(
            index="after_task", columns="task", values="accuracy", aggfunc="mean",
            dropna=False)
        R = mean.to_numpy(dtype=float)
        T = R.shape[0]
        cmap = plt.get_cmap("viridis").copy()
        cmap.set_bad("0.85")
        image = ax.imshow(np.ma.masked_invalid(R), vmin=0, vmax=1, cmap=cmap)
        for i in range(T):
            for j in range(R.shape[1]):
                if np.isfinite(R[i, j]):
                    ax.text(j, i, f"{R[i, j]:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if R[i, j] < 0.6 else "black")
        ax.set_xticks(range(R.shape[1]), [str(t) for t in mean.columns])
        ax.set_yticks(range(T), [str(t) for t in mean.index])
        ax.tick_params(labelsize=7)
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("task", fontsize=7)
        ax.set_ylabel("after task", fontsize=7)
    for ax in list(axes.flat)[len(labels):]:
        ax.axis("off")
    fig.suptitle(f"Accuracy matrices R[i, j], Split {title} (mean over seeds; grey: not "
                 f"measured)", fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.92, 1))
    if image is not None:
        fig.colorbar(image, cax=fig.add_axes((0.93, 0.15, 0.015, 0.7)), label="test accuracy")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_continual(frame: pd.DataFrame, path: pathlib.Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 3.8))
    colours = plt.get_cmap("tab20").colors
    for i, (label, rows) in enumerate(frame.groupby("model_label", sort=False)):
        # tab20's dark shades, then its light ones: 20 models before a colour repeats
        joint = "joint" in rows and rows["joint"].fillna(False).astype(bool).any()
        style = dict(color="black", ls="--") if joint else dict(
            color=colours[(2 * i) % 20 + (2 * i) // 20 % 2])
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
    ax.set_title(f"Split {title}, class-incremental (Fig. 3 style)", fontsize=9)
    bx.set_xlabel("after task")
    bx.set_ylabel("dead fraction of hidden units")
    bx.set_title("dead neurons per task (Fig. 10c style)", fontsize=9)
    for axis in (ax, bx):
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    # beside the panels: inside, a legend of 12 models covers curves (the oracle's on top)
    bx.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
