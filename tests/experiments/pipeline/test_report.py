"""experiments.pipeline.report: an experiment's output files for a hand-written config, and the
errors at the experiment's boundaries naming the caller's parameter."""

import pathlib

import pandas as pd
import pytest

from experiments.pipeline.report import experiment_markdown, write_experiment_outputs
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec

_GOLDEN = pathlib.Path(__file__).parents[2] / "data" / "tiny_sweep_all_kinds.csv"


def _golden():
    return pd.read_csv(_GOLDEN, dtype={"settings": str})


def test_experiment_outputs_without_panels_or_claims(tmp_path):
    """A hand-written config without panels under a name without claims: files, no crash."""
    from experiments.runner.sweep import run_sweep
    config = ExperimentConfig(name="mine", preset="tiny", target=TargetSpec(n_inputs=2, degree=1),
                              models=(ModelSpec("dense", width=4),), seeds=(0,), n_train=32,
                              n_eval=16)
    frame = run_sweep([config], tmp_path / "run", "cpu", progress=False)
    paths, claims = write_experiment_outputs("mine", [config], frame, tmp_path)
    assert claims == [] and (tmp_path / "claims.csv").exists()


def test_experiment_boundaries_name_the_callers_parameter(tmp_path):
    from experiments.analysis.scaling import window_text
    from experiments.kinds.routers import build_router
    from experiments.runner.rows import compute_row
    assert type(build_router(ModelSpec("pkm", width=16, k=4), 2, 0)).__name__ == "PKM"
    with pytest.raises(ValueError, match="dim must be even for a pkm router .*got 1"):
        build_router(ModelSpec("pkm", width=16, k=4), 1, 0)  # named PKMConfig's d_in
    config = ExperimentConfig(name="e", preset="tiny", target=TargetSpec(n_inputs=2, degree=1),
                              models=(ModelSpec("dense", width=4),), seeds=(0,), n_train=16,
                              n_eval=8)
    with pytest.raises(ValueError, match="seed must be an integer"):
        compute_row(config, config.models[0], None, "cpu")  # was TypeError from int(None)
    assert window_text("width", (1.0, None)) == "width in [1, inf]"
    with pytest.raises(TypeError, match="x must be a column name"):
        window_text(None, (1.0, None))  # was "None in [1, inf]"
    with pytest.raises(ValueError, match="frame: models"):
        experiment_markdown("table1", _golden(), [config], [])
