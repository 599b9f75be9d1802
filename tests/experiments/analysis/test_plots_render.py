"""Every figure of the scaling experiments and the SDM curves, rendered at tiny sizes from
synthetic results frames: tick labels never overlap (bounding boxes from the renderer), every
panel names its regime from the config that ran, and a planted overlap is caught."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter  # noqa: E402

from experiments.analysis import plots
from experiments.papers import catalogue  # noqa: E402
from experiments.runner.specs import fit_of  # noqa: E402

REGIME_WORDS = ("exact least squares", "Adam", "trained end to end")


def synthetic_rows(config, seeds=(0, 1)) -> pd.DataFrame:
    """Rows shaped like ``results.csv`` for every model of ``config``: sizes from the spec,
    an eval nMSE falling with size, a fixed seeded noise."""
    rng = np.random.default_rng(0)
    rows = []
    for seed in seeds:
        for spec in config.models:
            buckets = None
            if spec.kind in ("lsh", "lsh_table"):
                buckets = float(2 ** (spec.n_bits or 6) * spec.n_tables) if spec.bucket_width \
                    is None else float(round(400 / spec.bucket_width))
            width = spec.width
            units = spec.k or width or spec.n_tables
            size = buckets or width
            rows.append({"experiment": config.name, "target": config.target.label(),
                         "model": spec.kind, "model_label": spec.display(),
                         "model_key": spec.key(), "width": width, "k": spec.k,
                         "buckets": buckets, "nonempty_buckets": buckets,
                         "activated_units": units, "flops_paper": 18 * units,
                         "fit": fit_of(spec, config), "seed": seed,
                         "eval_nmse": float(size ** -0.5 * np.exp(rng.normal(0, 0.05)))})
    return pd.DataFrame(rows)


def tick_overlaps(fig) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty x or y tick labels of one axes whose rendered boxes
    intersect."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pairs = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels(which="both")
                      if t.get_visible() and t.get_text()]
            boxes = [t.get_window_extent(renderer) for t in labels]
            for i in range(len(labels)):
                for j in range(i + 1, len(labels)):
                    if boxes[i].overlaps(boxes[j]):
                        pairs.append((labels[i].get_text(), labels[j].get_text()))
    return pairs


def figure_of(config, mask=False):
    rows = synthetic_rows(config)
    fit_mask = (lambda r: r.index.isin(r.index[r["eval_nmse"] < 1])) if mask else None
    return plots.experiment_figure([(p, s, rows) for p, s in config.panels.items()],
                                   config.name, fit_mask=fit_mask, config=config)


CONFIGS = [(name, i) for name in ("fig2", "fig3", "fig4", "table1", "table2", "routers",
                                  "subspace") for i in range(2)]


@pytest.mark.parametrize("name,index", CONFIGS)
def test_every_experiment_figure_has_apart_ticks_and_named_regimes(name, index):
    config = catalogue.experiment_configs(name, "tiny")[index]
    fig = figure_of(config, mask=name == "subspace")
    try:
        assert tick_overlaps(fig) == []
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        assert len(titles) == len(config.panels)
        for title in titles:
            assert any(words in title for words in REGIME_WORDS), title
    finally:
        plt.close(fig)


def test_titles_come_from_the_config_that_ran():
    config = catalogue.fig3("tiny")[1]
    assert config.fit == "adam"
    edited = config.with_(train_steps=30)
    fig = figure_of(edited)
    try:
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        assert all("30 steps" in t for t in titles) and not any("60 steps" in t for t in titles)
    finally:
        plt.close(fig)
    # the preset keeps no regime words in its panels' titles: nothing to go stale in a TOML
    assert not any("Adam" in spec.get("title", "") for spec in config.panels.values())


def test_a_title_copied_by_an_older_config_loses_its_stale_regime():
    config = catalogue.fig3("tiny")[1].with_(train_steps=30)
    spec = {**config.panels["a"], "title": "DSM vs dense\n— Adam, 60 steps of 256, lr 0.01"}
    title = plots.panel_title("a", spec, synthetic_rows(config), config)
    assert "60 steps" not in title and "30 steps" in title


def test_routers_panel_names_both_regimes():
    config = catalogue.routers("tiny")[0]
    title = plots.panel_title("a", config.panels["a"], synthetic_rows(config), config)
    assert "exact least squares: dense, DSM" in title and "trained end to end" in title


def planted_axis(values, width_inches=2.0):
    fig, ax = plt.subplots(figsize=(width_inches, 2.0))
    ax.plot([16, 1024], [1, 2])
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(values))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(FixedLocator([]))
    return fig


def test_planted_overlap_224_and_256_is_caught():
    fig = planted_axis([16, 64, 224, 256, 1024])
    try:
        assert ("224", "256") in tick_overlaps(fig)
    finally:
        plt.close(fig)
    fig = planted_axis(list(plots.spaced_ticks([16, 64, 224, 256, 1024])))
    try:
        assert tick_overlaps(fig) == []
    finally:
        plt.close(fig)


def test_spaced_ticks_threshold():
    # 224 → 256 is 0.058 decades of 1.81 (3.2 %): one of them dropped under a 5 % gap, both
    # kept under a 3 % one
    assert not {224, 256} <= set(plots.spaced_ticks([16, 64, 224, 256, 1024], min_gap=0.05))
    assert {224, 256} <= set(plots.spaced_ticks([16, 64, 224, 256, 1024], min_gap=0.03))
    assert list(plots.spaced_ticks([16, 1024])) == [16, 1024]
    with pytest.raises(ValueError, match="min_gap"):
        plots.spaced_ticks([1, 2], min_gap=1.5)


def test_subspace_figure_marks_window_law_and_markers():
    config = catalogue.subspace("tiny")[0]
    fig = figure_of(config, mask=True)
    try:
        labels = [t.get_text() for ax in fig.axes if ax.get_legend()
                  for t in ax.get_legend().get_texts()]
        assert any(text.startswith("pre-registered fit window") for text in labels)
        assert "filled: fitted (in window)" in labels
        assert "open: outside the fit window" in labels
        assert any("fitted law" in text for text in labels)
    finally:
        plt.close(fig)


def test_sdm_figure_says_the_weightings_overlap():
    from experiments.papers.sdm_curves import SdmCurvesConfig, coinciding_weightings, sdm_curves_tables, sdm_figure

    config = SdmCurvesConfig(n=16, radii=(3,))
    curves, fits = sdm_curves_tables(config)
    fig = sdm_figure(curves, fits, config)
    assert tick_overlaps(fig) == []
    title = fig.axes[0].get_title()
    assert "overlap" in title or "coincide" in title
    # identical curves are one group; a curve moved by more than atol is its own
    twin = curves.copy()
    twin.loc[twin.weighting == "linear", "normalised"] = \
        twin.loc[twin.weighting == "binary", "normalised"].to_numpy()
    assert coinciding_weightings(twin, 3, config.weightings, 7)[0][:2] == ["binary", "linear"]
    twin.loc[(twin.weighting == "linear") & (twin.d_v == 1), "normalised"] += 1e-6
    assert ["linear"] in coinciding_weightings(twin, 3, config.weightings, 7, atol=1e-9)
