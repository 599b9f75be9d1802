"""Every scaling experiment of the papers by name (``EXPERIMENTS``) and its configs at a preset
(``experiment_configs``): Figures 2–4 and Tables 1–2 of Baykal et al. 2022, the subspace sweep
and the routers; one module each (``baykal_figures``, ``baykal_tables``, ``subspace``,
``router_study``)."""

from __future__ import annotations

from experiments.papers.baykal_figures import fig2, fig3, fig4
from experiments.papers.baykal_tables import table1, table2
from experiments.papers.presets import _check_preset
from experiments.papers.router_study import routers
from experiments.papers.subspace_sweep import subspace
from experiments.runner.specs import ExperimentConfig

EXPERIMENTS = {"fig2": fig2, "fig3": fig3, "fig4": fig4, "table1": table1, "table2": table2,
               "subspace": subspace, "routers": routers}


def experiment_configs(name: str, preset: str) -> list[ExperimentConfig]:
    """The configs of experiment ``name`` at ``preset``.

    Raises:
        ValueError: unknown experiment or preset name.
    """
    if name not in EXPERIMENTS:
        raise ValueError(f"experiment must be one of {sorted(EXPERIMENTS)}, got {name!r}")
    _check_preset(preset)
    return EXPERIMENTS[name](preset)
