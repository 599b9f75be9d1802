"""What a router experiment writes: the cost-formula column, table.md's pivots and FLOPs table,
claims.csv without claims, the report reading it, and the plots' axis labels and legends."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from experiments.analysis.plots import axis_label, experiment_figure, with_size
from experiments.papers.catalogue import experiment_configs
from experiments.papers.router_study import ROUTER_LABELS
from experiments.pipeline.report import (
    CLAIM_COLUMNS,
    experiment_markdown,
    summary_table,
    write_experiment_outputs,
)
from experiments.pipeline.reproduce import write_report
from experiments.kinds.routers import build_router
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.sweep import run_sweep


def _synthetic_routers(preset="quick", seeds=(0,)):
    """A results frame shaped like the routers experiment's (every model of the preset), with
    eval MSE falling with the model's size: numbers need not be real here. (One seed: no
    bootstrap intervals to compute, so the report and plots are quick.)"""
    configs = [c.with_(seeds=seeds) for c in experiment_configs("routers", preset)]
    rows = []
    for config in configs:
        for spec in config.models:
            for seed in seeds:
                if spec.kind == "lsh":
                    size, units, width, buckets = 2 ** spec.n_bits, 1, np.nan, 2 ** spec.n_bits
                else:
                    size, units, width, buckets = spec.width, spec.k or spec.width, spec.width, np.nan
                rows.append({"experiment": "routers", "target": config.target.label(),
                             "model": spec.kind, "model_label": spec.display(), "width": width,
                             "k": spec.k, "buckets": buckets, "activated_units": units,
                             "flops_paper": 18 * units, "flops_true": 20 * units,
                             "flops_cost_formula": 9 * units if spec.kind == "smear" else np.nan,
                             "fit": "exact", "eval_mse": (1 + 0.01 * seed) / size,
                             "seed": seed, "dead_fraction": np.nan, "usage_cv": np.nan})
    return configs, pd.DataFrame(rows)


def test_cost_formula_column_is_smears_section3_formula_and_empty_otherwise(tmp_path):
    models = (ModelSpec("smear", width=64, k=16, n_experts=4, label="SMEAR"),
              ModelSpec("comet", width=64, k=16, label="COMET"),
              ModelSpec("dsm", width=64, k=16, label="DSM"))
    config = ExperimentConfig(name="routers", preset="tiny", target=TargetSpec("polynomial"),
                              models=models, seeds=(0,), n_train=256, n_eval=128,
                              train_steps=4, train_batch=64)
    frame = run_sweep([config], tmp_path, device="cpu", progress=False).set_index("model")
    layer = build_router(models[0], dim=8, seed=0)
    assert frame.loc["smear", "flops_cost_formula"] == layer.cost()["paper_formula"]
    # the formula is not the counted FLOPs (it charges the merge half): both are reported
    assert frame.loc["smear", "flops_true"] == layer.cost()["total"] != layer.cost()["paper_formula"]
    assert frame.loc[["comet", "dsm"], "flops_cost_formula"].isna().all()
    on_disk = pd.read_csv(tmp_path / "results.csv").set_index("model")
    assert on_disk.loc["smear", "flops_cost_formula"] == layer.cost()["paper_formula"]

    text = experiment_markdown("routers", frame.reset_index(), [config], [])
    flops = text.split("FLOPs per example:")[1]
    line = next(l for l in flops.splitlines() if l.startswith("| SMEAR"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:5] == ["16", "64", str(layer.cost()["total"]),
                          str(layer.cost()["paper_formula"])]


def test_no_claims_gives_a_csv_with_its_header_and_no_claims_section(tmp_path):
    configs, frame = _synthetic_routers("tiny")
    frame = frame[~frame["model_label"].isin(ROUTER_LABELS.values())]  # no router: no claim
    _, claims = write_experiment_outputs("routers", configs, frame, tmp_path)
    assert claims == []
    read = pd.read_csv(tmp_path / "claims.csv")
    assert list(read.columns) == CLAIM_COLUMNS and read.empty
    text = (tmp_path / "table.md").read_text()
    assert "Claims" not in text and text.endswith("|\n")


def test_router_claims_judge_each_router_against_the_trained_dense_mlp_per_target():
    from experiments.papers.router_study import TRAINED_DENSE_LABEL
    from experiments.pipeline.report import claims_for

    configs, frame = _synthetic_routers("quick", seeds=(0, 1, 2, 3, 4))
    # MSE 1/size: every router (4a) wins; each row its own 1 % seed noise (paired tests need it)
    frame["eval_mse"] *= np.exp(np.random.default_rng(0).normal(0, 0.01, len(frame)))
    targets = list(pd.unique(frame["target"]))
    first = frame["target"] == targets[0]
    sdmlp = frame["model_label"] == "SDMLP"
    frame.loc[first & sdmlp, "eval_mse"] = 10.0  # SDMLP loses everywhere on one target
    pkm = (frame["model_label"] == "PKM") & (frame["activated_units"] == 16)
    frame.loc[first & pkm, "eval_mse"] = 10.0  # PKM loses at a = 16 only
    every = claims_for("routers", frame, configs)
    claims = {(c.claim.split(" beats")[0], c.claim.split("units, ")[1].split(" (")[0]): c
              for c in every if " beats the dense MLP" in c.claim}
    assert len(claims) == len(ROUTER_LABELS) * len(targets)
    # each router's own paper is its source, not COMET's
    assert claims[("PKM", targets[0])].source.startswith("Csordás et al. 2023")
    assert claims[("SMEAR", targets[0])].source.startswith("Muqeeth et al. 2024")
    assert claims[("SDMLP", targets[0])].source.startswith("Bricken et al. 2023")
    assert claims[("COMET", targets[0])].source.startswith("COMET §5.2.1")
    assert claims[("SDMLP", targets[0])].diagnosis and not claims[("COMET", targets[0])].diagnosis
    # Csordás et al.'s own comparison, at equal total width: σ-MoE (width 4a) against the
    # trained dense MLP as wide (a' = 4a) where the run has one (a = 16, 64 of 16, 64, 256)
    equal = [c for c in every if " the parameter-equal dense MLP" in c.claim]
    assert {c.claim.split(" ")[0] for c in equal} == {"σ-MoE", "PKM"}
    assert all(c.evidence.count("width") == 2 for c in equal)
    assert claims[("SDMLP", targets[0])].verdict == "not supported"
    assert claims[("SDMLP", targets[1])].verdict == "supported"
    assert claims[("PKM", targets[0])].verdict == "mixed"
    assert claims[("PKM", targets[0])].evidence.startswith("2/3 lower")
    assert claims[("COMET", targets[0])].verdict == "supported"
    # against the trained dense MLP, not the frozen-feature dense model
    frame.loc[frame["model_label"] == TRAINED_DENSE_LABEL, "eval_mse"] = 1e-9
    verdicts = {c.claim.split(" ")[1]: c.verdict for c in claims_for("routers", frame, configs)
                if " the parameter-equal dense MLP" in c.claim or " beats" in c.claim}
    assert {v for c, v in verdicts.items() if c == "beats"} == {"not supported"}
    assert verdicts["matches"] == "not supported" and verdicts["underperforms"] == "supported"


def test_fig4_claims_are_still_written_with_their_section(tmp_path):
    rows = []
    for units, dense, dsm in [(8, 1.0, 0.5), (32, 0.8, 0.4)]:
        for seed in (0, 1, 2):
            rows += [{"experiment": "fig4", "target": "t", "model": "dense",
                      "model_label": "dense", "width": units, "buckets": np.nan,
                      "activated_units": units, "eval_mse": dense, "seed": seed},
                     {"experiment": "fig4", "target": "t", "model": "dsm", "model_label": "DSM",
                      "width": 128, "buckets": np.nan, "activated_units": units,
                      "eval_mse": dsm * (1 + 0.01 * seed), "seed": seed}]
    config = experiment_configs("fig4", "tiny")[0]
    write_experiment_outputs("fig4", [config], pd.DataFrame(rows), tmp_path)
    read = pd.read_csv(tmp_path / "claims.csv")
    assert read.loc[0, "verdict"] == "supported" and list(read.columns) == CLAIM_COLUMNS
    assert {"negative control", "positive control"} <= set(read["role"])
    text = (tmp_path / "table.md").read_text()
    assert "Claims and controls" in text
    assert text.index("Controls (decided by the claims' rule") < text.index("Claims and controls")


def test_report_reads_claims_files_without_claims(tmp_path):
    for step, body in [("routers", "experiment,claim,verdict,evidence\n"), ("old", "\n"),
                       ("fig4", "experiment,claim,verdict,evidence\nfig4,DSM wins,supported,x\n")]:
        (tmp_path / step).mkdir()
        (tmp_path / step / "claims.csv").write_text(body)
    written = {step: [f"{step}/claims.csv"] for step in ("routers", "old")}
    text = write_report(tmp_path, "tiny", written).read_text()
    assert "## Claims" not in text  # no claim anywhere: no claims section
    written["fig4"] = ["fig4/claims.csv"]
    text = write_report(tmp_path, "tiny", written).read_text()
    # a claims.csv of the old four columns is still read: the new columns come out empty
    assert "| fig4 | claim | DSM wins |  |  |  |  |  |  | **supported** |  |  |  |  |  |  |  |" \
        in text  # kind, quote, axis, quantifier, regime, source empty
    assert "## Claims at a glance" in text


def test_report_gives_the_reason_of_every_claim_that_is_not_supported(tmp_path):
    from experiments.pipeline.report import Claim

    claims = [Claim("fig2", "LSH beats dense", "not supported", "0/2 lower", regime="adam",
                    source="Baykal et al. 2022, §5.2, Fig. 2b", significance="paired over 3",
                    diagnosis="LSH model: one table | piecewise constant"),
              Claim("fig2", "DSM beats dense", "supported", "2/2 lower", regime="exact",
                    diagnosis="never shown")]
    (tmp_path / "fig2").mkdir()
    pd.DataFrame([c.__dict__ for c in claims], columns=CLAIM_COLUMNS).to_csv(
        tmp_path / "fig2" / "claims.csv", index=False)
    text = write_report(tmp_path, "tiny", {"fig2": ["fig2/claims.csv"]}).read_text()
    line = next(l for l in text.splitlines() if l.startswith("| fig2 | claim | LSH beats dense"))
    assert "| adam | Baykal et al. 2022, §5.2, Fig. 2b | **not supported** |" in line
    assert "| paired over 3 |" in line and line.endswith(
        "LSH model: one table \\| piecewise constant |")
    supported = next(l for l in text.splitlines()
                     if l.startswith("| fig2 | claim | DSM beats dense"))
    assert "never shown" not in supported and supported.endswith("|  |")


def test_activated_units_pivot_never_averages_lsh_sizes_together():
    configs, frame = _synthetic_routers("quick")
    text = experiment_markdown("routers", frame, configs, [])
    target = configs[0].target.label()
    section = text.split(f"activated_units, target {target}:")[1].split("\n\n")[1]
    header = [c.strip() for c in section.splitlines()[0].strip("|").split("|")]
    assert header == ["model_label", "16", "64", "256"]  # no "1" column of LSH alone
    assert "| LSH" not in section
    # LSH by its bucket counts beside dense by width: one bucket count per cell (n = 1 seed,
    # not n = 3 bucket counts averaged)
    sized = text.split(f"size (buckets for LSH, width for dense), target {target}:")[1]
    lsh = next(l for l in sized.splitlines() if l.startswith("| LSH"))
    cells = [c.strip() for c in lsh.strip("|").split("|")][1:]
    assert [c for c in cells if c] == [f"{1 / b:.3g} (±0, n=1)" for b in (64, 256, 1024)]
    with pytest.raises(ValueError, match="several sizes"):
        summary_table(with_size(frame), "model_label", "activated_units")


def test_panel_x_labels_describe_every_plotted_model():
    configs, frame = _synthetic_routers("tiny")
    frame = with_size(frame)
    panel_b = configs[0].panels["b"]["models"]
    assert axis_label(frame, "size", panel_b) == "total width (all but LSH) / non-empty buckets (LSH)"
    assert axis_label(frame, "size", ["dense", "LSH"]) == "total width (dense) / non-empty buckets (LSH)"
    assert axis_label(frame, "size", ["DSM", *ROUTER_LABELS.values()]) == "total width"
    assert axis_label(frame, "activated_units", panel_b) == "activated units"


def test_legends_leave_the_data_alone_and_tick_labels_do_not_overlap():
    configs, frame = _synthetic_routers("quick")
    rows = frame[frame["target"] == configs[0].target.label()]
    panels = [(name, spec, rows) for name, spec in configs[0].panels.items()]
    fig = experiment_figure(panels, "routers")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    data_axes = [ax for ax in fig.axes if ax.get_xlabel()]
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(data_axes) == len(legends) == 2
    assert data_axes[1].get_xlabel() == "total width (all but LSH) / non-empty buckets (LSH)"
    for ax in data_axes:
        box = ax.get_window_extent(renderer)
        for legend in legends:
            assert not legend.get_window_extent(renderer).overlaps(box)
        # the labels drawn inside the axis' span (matplotlib keeps off-range ticks, unseen)
        boxes = sorted((t.get_window_extent(renderer) for t in ax.get_xticklabels(which="both")
                        if t.get_visible() and t.get_text()), key=lambda b: b.x0)
        shown = [b for b in boxes if box.x0 - 1 <= (b.x0 + b.x1) / 2 <= box.x1 + 1]
        assert len(shown) >= 2
        assert all(a.x1 <= b.x0 for a, b in zip(shown, shown[1:]))
    plt.close(fig)
