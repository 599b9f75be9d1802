"""The presets and the model grid the scaling experiments share (Baykal et al. 2022, §5:
Figures 2–4 in ``baykal_figures``, Tables 1–2 in ``baykal_tables``; the subspace sweep in
``subspace``; the routers in ``router_study``; by name in ``catalogue``), each at three
presets: ``tiny`` (seconds; for tests), ``quick`` (widths scaled down; these seven
experiments together: about 620 s, summed over their rows, in a ``sparselab
reproduce --workers 2`` on a slow 2-core VM — 820 s before the 2-core time budget halved the
"adam" regime's and the routers' Adam steps) and ``paper`` (the paper's sizes; meant for a
GPU).

Every frozen-feature experiment (Figures 2–4, Tables 1–2) runs in both training regimes
(``REGIMES``, one config each): the top layer solved exactly ("exact", ridge least squares:
the best top layer the frozen features allow) and trained as the paper did ("adam": Adam on
the top layer, §5.1, with one budget ``ADAM_BUDGET`` for every model, dense and sparse). The
row key holds the fit, so the two regimes never share a row, and every panel names its
regime (``regime_title``) and plots only its rows (``"fit"`` in the panel).

The LSH models of Figures 2–4 come in the three hash families the theory and practice use
(``LSH_FAMILY_NAMES``: sign hyperplanes through the origin, affine hyperplanes, Euclidean LSH
with offsets b ~ U[0, w]) with s ∈ ``LSH_TABLES`` = {1, 4, 16} tables, plotted against their
number of non-empty buckets on the training data (``nonempty_buckets``, averaged over seeds
by ``experiments.analysis.plots.with_size``), beside a uniform random hash table of as many buckets
(Figures 2 and 3, panel e: §1's "LSH outperforms uniform random hashing").

Quick sizes against the paper's (paper preset = the paper's sizes where it gives them):

* n_train 20 000, n_eval 5 000, 3 seeds (paper preset: 200 000 / 20 000; the paper's sample
  sizes are in its Appendix D, which our copy lacks);
* Figs 2–3: dense widths 16…2048 (paper 64…8192), DSM total widths 512 and 2048 with
  k = 16…256 (paper 2048…16384, k = 64…1024); LSH: 3 families × s ∈ {1, 4, 16} × 4 sizes
  each, from about 30 to 8 000 non-empty buckets (paper: one family, one table, 2^6…2^16
  buckets), and a uniform hash of 2^6…2^15 buckets;
* Fig. 4: sparse models of total width 1024 (paper 8192); LSH of the three families at
  s ∈ {1, 16} with 3 sizes each, in one panel (Fig. 2 has the full grid on the same target);
* Tables 1–2: activated units 64–256 and widths 256–1024 (paper 1024–4096);
* the "adam" regime: Adam, 200 steps of 512 examples (5.1 epochs of 20 000), learning rate
  2e-2 with a cosine decay, on standardised targets (paper preset: 20 000 steps of 1 024 at
  1e-3; the paper's budget is not in our copy). In the quick preset it fits a thinner grid
  (``ADAM_GRID``): the LSH tables at s ∈ {1, 16} with 3 sizes, dense at 5 widths and DSM at
  3 k per total width.

The paper's appendix with the training details is not available:
the sample sizes, seeds and fitting choices below are our documented defaults.
"""

from __future__ import annotations

from experiments.kinds.linear import LSH_FAMILIES
from experiments.runner.specs import ExperimentConfig, ModelSpec
from routing.validation import check_choice, check_int

PRESETS = ("tiny", "quick", "paper")
#: The training regimes of the frozen-feature experiments: ``ExperimentConfig.fit`` values.
REGIMES = ("exact", "adam")
#: The "adam" regime's Adam budget per preset, the same for every model of an experiment
#: (``ExperimentConfig`` fields; batches of ``train_batch`` examples, cosine decay of the learning
#: rate, standardised targets: ``experiments.kinds.fitting``). Quick: 200 steps of 512 examples, 5.1
#: epochs of the 20 000 training points, at 20× Adam's default rate since the budget is short.
#: It was 400 steps until the 2-core time budget halved it, by cost alone (the regime's rows
#: were a seventh of a quick reproduce's row time); measured in Figure 2's quick rows (seed 0,
#: eval nMSE; exact fit in brackets), 200×512 gives dense width 2048 0.25 (0.047), DSM 512/k=256
#: 0.30 (0.15), DSM 2048/k=64 0.20 (0.20), 16-table affine LSH of 7 bits 0.50 (0.37; 400 steps:
#: 0.39), one-table sign LSH of 12 bits 0.75 (0.75), in 0.1–0.7 s a model. Earlier measurements
#: (random polynomial, seed 0): 400×512 at 2e-2 gave dense width 2048 0.18 (0.047), DSM
#: 512/k=256 0.25 (0.15), DSM 2048/k=64 0.20 (0.20), 16-table affine LSH 0.46 (0.37), one-table
#: sign LSH 0.74 (0.75), in 0.4–1.6 s a model on one core; 1 000×256 at 1e-2 gave 0.12, 0.21,
#: 0.20, 0.46, 0.74 in 0.6–2.3 s; 2 000×256 at 1e-3 left dense 2048 at 0.14 and a 16-table LSH
#: at 0.71. The budget undertrains the widest dense models most: the regime the paper's flat
#: dense column of Table 1 suggests, and why both regimes are reported.
ADAM_BUDGET = {
    "tiny": dict(train_steps=60, train_batch=256, train_lr=1e-2),
    "quick": dict(train_steps=200, train_batch=512, train_lr=2e-2),
    "paper": dict(train_steps=20_000, train_batch=1_024, train_lr=1e-3),
}
#: Hash families of the LSH models of Figures 2–4, in words (``ModelSpec.family``).
LSH_FAMILY_NAMES = {"sign": "sign hyperplanes through 0", "affine": "affine hyperplanes",
                    "euclidean": "Euclidean LSH"}
#: Tables s of the LSH models of Figures 2–4 (Baykal et al. §2.2's LSH(d, s, m)).
LSH_TABLES = (1, 4, 16)
#: Label of the dense models as wide as an LSH model's table count s (its activated units,
#: ``LSHModel.activated_units``): the paper's axis for LSH vs dense in Figs. 2–4 (Baykal et al.
#: 2022, §5.2, "the same number of activated units"). A label of their own, so that these
#: narrow models (width 1, 4, 16) join neither the dense curve nor its fits and controls.
EQUAL_UNITS_DENSE_LABEL = "dense, width s"
#: Label of the uniform random hash table (``ModelSpec("lsh", family="uniform")``, one table).
UNIFORM_HASH_LABEL = "uniform hash"
#: Euclidean LSH of Figures 2–4: hashes per table (one per input dimension, n = 8), and the
#: log2 of the slots per table its code vectors are folded into: at least 20 times the
#: largest per-table count of non-empty buckets of the quick grid (about 3 000 at s = 1 and
#: 1 700 at s = 4 of 2^16 slots, 200 at s = 16 of 2^14), so at most about 5 % of the buckets
#: share a slot with another (expected share ≈ T / slots).
EUCLIDEAN_HASHES = 8
EUCLIDEAN_SLOT_BITS = {1: 16, 4: 16, 16: 14}
#: LSH sizes per preset, family and s: hyperplanes per table (sign, affine) or bucket widths
#: w (euclidean), chosen from the non-empty bucket counts they give on 20 000 training points
#: (seed 0; no error was looked at) to span about 30 to 8 000 non-empty buckets in all, below
#: n_train / 2 (past it most buckets hold one point).
LSH_GRID = {
    "tiny": {"sign": {1: (4, 8), 4: (3, 6), 16: (2, 4)},
             "affine": {1: (5, 9), 4: (3, 6), 16: (2, 4)},
             "euclidean": {1: (8.0, 4.0), 4: (11.31, 5.657), 16: (22.63, 11.31)}},
    "quick": {"sign": {1: (6, 9, 12, 15), 4: (4, 7, 10, 12), 16: (3, 5, 7, 9)},
              "affine": {1: (7, 10, 13, 16), 4: (4, 7, 10, 13), 16: (3, 5, 7, 9)},
              "euclidean": {1: (8.0, 4.0, 2.828, 2.0), 4: (11.31, 5.657, 4.0, 2.828),
                            16: (22.63, 11.31, 8.0, 5.657)}},
    "paper": {"sign": {1: (6, 8, 10, 12, 14, 16), 4: (4, 6, 8, 10, 12, 14),
                       16: (3, 5, 7, 9, 11)},
              "affine": {1: (7, 9, 11, 13, 15, 17), 4: (4, 6, 8, 10, 12, 14),
                         16: (3, 5, 7, 9, 11)},
              "euclidean": {1: (8.0, 5.657, 4.0, 2.828, 2.0, 1.414),
                            4: (11.31, 8.0, 5.657, 4.0, 2.828, 2.0),
                            16: (22.63, 16.0, 11.31, 8.0, 5.657)}},
}
#: Buckets (2^n_bits) of the uniform random hash table of Figures 2 and 3.
UNIFORM_BITS = {"tiny": (4, 8), "quick": (6, 9, 12, 15), "paper": (6, 8, 10, 12, 14, 16)}
#: The quick preset's thinner grid for the "adam" regime (Adam costs 0.3–1 s per model where an
#: exact LSH or small dense fit costs milliseconds): LSH sizes kept per (family, s) — the
#: first, third and last of ``LSH_GRID`` at s ∈ {1, 16}, none at s = 4 — uniform hash sizes,
#: dense widths and DSM k of Figures 2 and 3. Other presets fit their full grid in both regimes.
ADAM_GRID = {"lsh_sizes": (0, 2, 3), "lsh_tables": (1, 16), "uniform": (6, 12, 15),
            "dense": (16, 64, 256, 1024, 2048), "dsm_ks": (16, 64, 256)}


#: Control seeds (``ExperimentConfig.control_seeds``) per preset and (experiment, regime — for
#: the routers, target family): (how many, the widest reference model run there). Only the
#: reference model (dense; the routers': the trained dense MLP) runs at them, for the
#: experiment's negative and positive controls (``experiments.analysis.claims.control_claims``).
#: A control reads *supported* only when the MDE from the measured seed sd is ≤ the SESOI
#: (ln 1.1 = 0.095), and with 3 seeds (2 for the routers) the positive controls of Figure 3,
#: Tables 1–2 and the routers could not reach it, while the negative controls had one seed a
#: side and could not fail at all. The counts come from ``CONTROL_NOISE``: with n seeds and a
#: true seed sd σ, the measured sd s has (n−1)s²/σ² ~ χ²(n−1), so P(MDE ≤ SESOI) =
#: P(χ²(n−1) ≤ (n−1)·(SESOI / (d*(n)·σ))²), d*(n) the standardised MDE of the paired t test
#: (power 0.8, α = 0.05: ``inference.minimal_detectable_effect(1, n)``; 3.26 at n = 3, 1.07 at
#: 9, 0.89 at 12). The positive control uses all n = run + control seeds, the negative one
#: h = ⌊n/2⌋ disjoint pairs (its σ is that of a difference of two seeds). The counts give, for
#: (positive, negative), P = fig2 exact (1.00, 0.93 at n = 12), adam (1.00, 0.88 at 10); fig3
#: exact (1.00, 0.80 at 12), adam (1.00, 0.88 at 12); fig4 exact (1.00, 0.93 at 12), adam (1.00,
#: 0.80 at 8); table1 exact (0.98, 0.92 at 12), adam (0.99, 0.92 at 12); table2 exact (≥ 0.92,
#: 0.97 at 23), adam (≥ 0.93, 0.89 at 29); routers polynomial (≥ 0.98, 0.97 at 10), hypercube
#: (1.00, 0.83 at 10). The effects themselves (−0.19 to −0.80 in Δ ln nMSE) are 2–35 sd from 0,
#: so the MDE decides. Below 6 seeds a control whose normality check fails goes to the exact
#: sign-flip, which cannot reach p ≤ 0.05 at all (2/2^n: ``sign_flip_seeds``): 5 routers seeds
#: read *underpowered* on a clean effect in the first quick run with these seeds, so every
#: reference has ≥ 8. Cost, measured (``wall_s`` per control seed): 0.12–0.9 s a regime,
#: 1.3–1.5 s a routers target; all control rows together ≈ 75 s of single-core time, on the
#: worker that finishes the experiments minutes before the checks' worker (a quick reproduce
#: with ``--workers 2`` took 9:14 with the first plan, the checks its longest path). Table 2's
#: and the routers' counts were raised after that run (post hoc, for power alone: no verdict
#: of a claim reads a control row).
#: The widest control model: 512 in the exact regime (an exact fit at 1024 costs as much as all
#: narrower ones together, and the pairs up to 512 still give four x/4 pairs), 1024 under Adam
#: (the 2048 of the thin grid doubles the cost); Table 2 runs 256 and 1024 (its only x/4
#: pair), not 512. The paper preset has none: its seed noise is not measured.
CONTROL_PLAN = {
    "quick": {("fig2", "exact"): (9, 512), ("fig2", "adam"): (7, 1024),
              ("fig3", "exact"): (9, 512), ("fig3", "adam"): (9, 1024),
              ("fig4", "exact"): (9, 512), ("fig4", "adam"): (5, 1024),
              ("table1", "exact"): (9, 256), ("table1", "adam"): (9, 256),
              ("table2", "exact"): (20, 1024), ("table2", "adam"): (26, 1024),
              ("routers", "polynomial"): (8, 256), ("routers", "hypercube"): (8, 256)},
}
#: Table 2's control widths: its x/4 pair alone (``CONTROL_PLAN``).
TABLE2_CONTROL_WIDTHS = (256, 1024)
#: The reference models' seed noise at the quick preset, from which ``CONTROL_PLAN`` was
#: chosen: (experiment, regime or target family) → (positive control's mean Δ ln nMSE, sd
#: over seeds of its per-seed Δ, sd of the negative control's per-pair Δ — √2 × the sd over
#: seeds of the per-seed mean ln nMSE over sizes), on the control models of ``CONTROL_PLAN``;
#: measured on the reference's rows alone at seeds 0–11 (Figures; Figure 2's rows are Figure
#: 4's: same target and models), 0–19 (Table 1), 0–15 (Table 2), 0–7 (routers). The tests
#: simulate the controls at these values (tests/experiments/analysis/test_control_power.py).
CONTROL_NOISE = {
    ("fig2", "exact"): (-0.617, 0.0225, 0.0468), ("fig2", "adam"): (-0.317, 0.0224, 0.0421),
    ("fig3", "exact"): (-0.706, 0.0459, 0.0549), ("fig3", "adam"): (-0.332, 0.0385, 0.0501),
    ("fig4", "exact"): (-0.617, 0.0225, 0.0468), ("fig4", "adam"): (-0.354, 0.0293, 0.0358),
    ("table1", "exact"): (-0.613, 0.0755, 0.0470), ("table1", "adam"): (-0.367, 0.0697, 0.0471),
    ("table2", "exact"): (-0.720, 0.0731, 0.0720), ("table2", "adam"): (-0.185, 0.0879, 0.0966),
    ("routers", "polynomial"): (-0.297, 0.0335, 0.0351),
    ("routers", "hypercube"): (-0.349, 0.0219, 0.0449),
}


def with_control_seeds(config: ExperimentConfig, reference: str, key: tuple[str, str],
                       widths=None) -> ExperimentConfig:
    """``config`` with the control seeds of ``CONTROL_PLAN[config.preset][key]``: that many
    seeds after the run's largest, at which only the models labelled ``reference`` up to the
    plan's widest width (or, with ``widths``, of those widths) run; ``config`` itself where
    the plan has no entry.

    Arguments:
        config: one config of an experiment.
        reference: the label of its reference model ("dense", or the routers' trained
            dense MLP).
        key: (experiment, regime) or, for the routers, (experiment, target family).
        widths: the control models' widths, instead of all up to the widest; None: all.

    Raises:
        ValueError: the plan names a reference the config does not have.
    """
    count, widest = CONTROL_PLAN.get(config.preset, {}).get(key, (0, 0))
    if not count:
        return config
    models, keys = [], set()
    for spec in config.models:
        if spec.display() != reference or spec.key() in keys or spec.width is None:
            continue
        if (spec.width in widths) if widths is not None else spec.width <= widest:
            models.append(spec)
            keys.add(spec.key())
    if not models:
        raise ValueError(f"config {config.name} has no model labelled {reference!r} up to "
                         f"width {widest} to run at its control seeds")
    first = max(config.seeds) + 1
    return config.with_(control_seeds=tuple(range(first, first + count)),
                        control_models=tuple(models))


def _check_preset(preset: str) -> None:
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")


def _sizes(preset):
    return {
        "tiny": dict(seeds=(0, 1), n_train=2_000, n_eval=1_000),
        "quick": dict(seeds=(0, 1, 2), n_train=20_000, n_eval=5_000),
        "paper": dict(seeds=(0, 1, 2), n_train=200_000, n_eval=20_000, train_steps=20_000,
                      train_batch=1024),
    }[preset]


def regime_title(config: ExperimentConfig) -> str:
    """How a config fits its frozen-feature models, in words for figure titles: "exact least
    squares", or e.g. "Adam, 1000 steps of 256, lr 0.01" (``config.fit`` "adam")."""
    if config.fit == "exact":
        return "exact least squares"
    return f"Adam, {config.train_steps} steps of {config.train_batch}, lr {config.train_lr:g}"


def _in_regime(config: ExperimentConfig) -> ExperimentConfig:
    """``config`` with each panel plotting its regime: the regime's fit as the panel's
    ``"fit"`` (``experiments.analysis.plots`` plots only those rows). The regime's words are not
    copied into the title: the plot writes them from the config that ran
    (``experiments.analysis.plots.panel_regime``), so an edited ``train_steps`` shows in every panel."""
    panels = {name: {**spec, "fit": config.fit} for name, spec in config.panels.items()}
    return config.with_(panels=panels)


def _regimes(preset: str, make) -> list[ExperimentConfig]:
    """One config per regime of ``REGIMES``: ``make(fit, thin)`` builds it (``thin``: use
    ``ADAM_GRID``, the quick preset's "adam" regime), with the preset's sizes and Adam budget,
    and the control seeds of the dense reference (``with_control_seeds``)."""
    configs = []
    for fit in REGIMES:
        config = _in_regime(make(fit, fit == "adam" and preset == "quick").with_(
            fit=fit, **ADAM_BUDGET[preset]))
        widths = TABLE2_CONTROL_WIDTHS if config.name == "table2" else None
        configs.append(with_control_seeds(config, "dense", (config.name, fit), widths))
    return configs


def lsh_label(family: str, n_tables: int) -> str:
    """Legend label of an LSH model of Figures 2–4, e.g. "LSH euclidean s=4".

    Raises:
        ValueError: ``family`` not one of ``LSH_FAMILIES``; ``n_tables`` not an integer >= 1.
    """
    check_choice(family, "family", LSH_FAMILIES)
    check_int(n_tables, "n_tables", 1)
    return f"LSH {family} s={n_tables}"


def _dense(widths):
    return [ModelSpec("dense", width=w, label="dense") for w in widths]


def _dense_at_tables(tables, dense_widths):
    """Dense models of width s for each LSH table count s (``EQUAL_UNITS_DENSE_LABEL``), but
    for the widths the dense curve runs already (a row is identified by its spec without the
    label, ``ModelSpec.key``: the two would be one row)."""
    return [ModelSpec("dense", width=s, label=EQUAL_UNITS_DENSE_LABEL) for s in tables
            if s not in dense_widths]


def _dsm(total_widths, ks):
    return [ModelSpec("dsm", width=W, k=k, label=f"DSM width {W}")
            for W in total_widths for k in ks if k <= W]


def _lsh_spec(family: str, n_tables: int, size) -> ModelSpec:
    label = lsh_label(family, n_tables)
    if family == "euclidean":
        return ModelSpec("lsh", n_bits=EUCLIDEAN_SLOT_BITS[n_tables], n_tables=n_tables,
                         n_hashes=EUCLIDEAN_HASHES, bucket_width=float(size), family=family,
                         label=label)
    return ModelSpec("lsh", n_bits=int(size), n_tables=n_tables, family=family, label=label)


def _lsh(preset: str, thin: bool) -> list[ModelSpec]:
    """The LSH models of Figures 2–4: every family of ``LSH_FAMILY_NAMES`` at each s of
    ``LSH_TABLES`` with the sizes of ``LSH_GRID`` (``thin``: ``ADAM_GRID``'s subset)."""
    models = []
    for family in LSH_FAMILY_NAMES:
        for s in LSH_TABLES:
            if thin and s not in ADAM_GRID["lsh_tables"]:
                continue
            sizes = LSH_GRID[preset][family][s]
            if thin:
                sizes = [sizes[i] for i in ADAM_GRID["lsh_sizes"]]
            models += [_lsh_spec(family, s, size) for size in sizes]
    return models


#: Baykal et al. 2022, Table 1: activated units of the dense model per FLOPs row (dim = 8).
TABLE1_ACTIVATED = {"tiny": (16, 32, 64), "quick": (64, 128, 256), "paper": (1024, 2048, 4096)}


TABLE2_WIDTHS = {"tiny": (32, 64), "quick": (256, 512, 1024), "paper": (1024, 2048, 4096)}
TABLE2_KS = {"tiny": (4, 8), "quick": (8, 16, 32, 64, 128, 256),
             "paper": (32, 64, 128, 256, 512, 1024)}


