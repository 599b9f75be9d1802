"""The claims of each scaling experiment (``claims_for``): Figs. 2–4, Tables 1–2, the
subspace exponent and the routers, with their sources and sizes against the paper's
(``experiments.analysis.claims``)."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.claims import (
    SESOI,
    Claim,
    adjust_family,
    control_claims,
    fit_regimes,
    seed_log_errors,
)
from experiments.papers.baykal_figures import _figure_claims
from experiments.papers.baykal_tables import _table1_claims, _table2_claims
from experiments.papers.catalogue import EXPERIMENTS, experiment_configs
from experiments.papers.presets import PRESETS
from experiments.papers.router_study import _router_claims
from experiments.papers.subspace_sweep import _subspace_claims
from experiments.runner.sweep import run_rows
from routing.validation import check_choice

#: Where each experiment's sizes stand against the paper's.
PAPER_SIZES = {
    "fig2": "paper: n = 8 inputs, degree 4; Fig. 2b's LSH beats dense from 2048 buckets; its "
            "widths, sample sizes and training are in Appendix D, not in our copy",
    "fig3": "paper: n = 8 inputs; sizes in Appendix D, not in our copy",
    "fig4": "paper: n = 8 inputs, degree 4; sizes in Appendix D, not in our copy",
    "table1": "paper: dense at 1024, 2048, 4096 activated units (FLOPs 18 432 … 73 728 = "
              "2·(8+1)·a), DSM at widths 2a and 4a; trained (Appendix D)",
    "table2": "paper: total widths 1024, 2048, 4096, DSM k = 32 … 1024; trained (Appendix D)",
    "subspace": "paper: no experiment (Theorem 4.1 and Lemma 4.2 only)",
    "routers": "the routers' papers: COMET 4-layer MLPs on CIFAR-10 (§5.2.1); Csordás et al. "
               "Transformer-XL LMs of 41M–262M parameters (§6); SMEAR T5 and ResNet-18 "
               "adapters (§4); SDMLP a 1 000-neuron MLP on CIFAR-10 embeddings (§5)",
}

#: The experiments ``claims_for`` judges.
CLAIM_EXPERIMENTS = ("fig2", "fig3", "fig4", "table1", "table2", "subspace", "routers")


def sizes_text(name: str, configs) -> str:
    """This run's sizes (preset, n_train, n_eval, seeds, the swept model sizes) and the
    paper's (``PAPER_SIZES``; none for an experiment of the user's own; when a config file
    changed the target, that the paper's settings are for another function, instead of them).

    Raises:
        TypeError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be an experiment name (a string), got {name!r}")
    if not configs:
        return PAPER_SIZES.get(name, "")
    c = configs[0]
    models = [m for config in configs for m in config.models]
    spans = []
    for attribute, word in (("width", "widths"), ("k", "k"), ("n_bits", "LSH bits"),
                            ("bucket_width", "bucket widths")):
        values = sorted({getattr(m, attribute) for m in models
                         if getattr(m, attribute) is not None})
        if values:
            spans.append(f"{word} {values[0]:g}–{values[-1]:g}" if len(values) > 1
                         else f"{word} {values[0]:g}")
    controls = max(len(config.control_seeds) for config in configs)
    ours = (f"this run (preset {c.preset}): n_train {c.n_train:,}, n_eval {c.n_eval:,}, "
            f"{len(c.seeds)} seeds"
            + (f" (the reference model at up to {controls} control seeds more, for the "
               f"controls)" if controls else "")
            + (f"; {', '.join(spans)}" if spans else ""))
    paper = PAPER_SIZES.get(name)
    if paper and name in EXPERIMENTS and c.preset in PRESETS:
        # a config file's own target: the paper's settings describe another function
        theirs = sorted({config.target.label() for config in experiment_configs(name, c.preset)})
        mine = sorted({config.target.label() for config in configs})
        if not set(mine) <= set(theirs):
            paper = (f"this run's target ({', '.join(mine)}) is not the paper's "
                     f"({', '.join(theirs)}): the paper's sizes are for another function")
    return ours + (f" — {paper}" if paper else "")


def claims_for(name: str, frame: pd.DataFrame, configs: list, fits: pd.DataFrame | None = None
               ) -> list[Claim]:
    """The claims that experiment ``name`` tests (Baykal et al. §5.2; for ``routers``, each
    router against the dense MLP trained alike; for ``subspace``, Theorem 4.1's exponent),
    judged on ``frame``'s rows at the run's seeds per regime (``fit``) present, after the
    experiment's negative and positive controls (``control_claims`` on the dense model, on
    the run's seeds and the configs' control seeds; none for subspace), with Holm's
    adjustment over the experiment's claims (``adjust_family``).

    Arguments:
        name: the experiment.
        frame: its results rows, control seeds' rows included (a subspace frame without the
            geometry columns gets them from ``experiments.papers.subspace_sweep.with_geometry``,
            which redraws the inputs).
        configs: its configs (may be empty: sizes and subspace claims then come from the rows
            alone or are skipped, and no row is told apart as a control seed's).
        fits: ``experiments.analysis.fits.experiment_fits``'s table, to reuse its offset-law fits
            (subspace); None to fit here.

    Returns:
        list of ``Claim``.

    Raises:
        ValueError: ``name`` is not one of ``CLAIM_EXPERIMENTS``.
    """
    from experiments.analysis.plots import with_size

    check_choice(name, "name", CLAIM_EXPERIMENTS)
    everything = with_size(frame)
    frame = run_rows(everything, configs)  # the claims: the run's seeds only
    control_seeds = sorted({s for c in configs for s in c.control_seeds})
    sizes = sizes_text(name, configs)
    n_train = configs[0].n_train if configs else None
    claims: list[Claim] = []
    if name == "routers":
        return _with_controls(_router_claims(name, frame, sizes, n_train, everything,
                                             control_seeds))
    if name == "subspace":
        return _subspace_claims(frame, configs, fits, sizes)
    x = {"table1": "flops_paper", "table2": "width"}.get(name, "activated_units")
    controls = []
    for regime, rows in fit_regimes(everything):  # the controls: the control seeds too
        if (rows["model_label"] == "dense").any() and x in rows:
            controls += control_claims(name, seed_log_errors(rows, "dense", x), "dense", x,
                                       SESOI["ln_error"], regime=regime, sizes=sizes,
                                       control_seeds=control_seeds)
    for regime, rows in fit_regimes(frame):
        common = dict(regime=regime, sizes=sizes, n_train=n_train)
        if name in ("fig2", "fig3", "fig4"):
            claims += _figure_claims(name, rows, common)
        elif name == "table1":
            claims += _table1_claims(name, rows, common)
        elif name == "table2":
            claims += _table2_claims(name, rows, common)
    return _with_controls(claims + controls)


def _with_controls(claims: list[Claim]) -> list[Claim]:
    """Holm over the claims (``adjust_family``), controls kept after them (the report shows
    them first); no controls where the experiment tests no claim."""
    if not any(c.role == "claim" for c in claims):
        return []
    return adjust_family(claims)


