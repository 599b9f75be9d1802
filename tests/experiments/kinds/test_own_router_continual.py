"""examples/own_router.py's router, registered once, runs in a sweep and in the continual
harness (Bricken et al. 2023 §5) — by ``run_continual_model`` and by ``sparselab scale
--module FILE --experiment continual``."""

import json
import pathlib

import numpy as np
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from experiments.kinds.continual_harness import MODELS, ContinualSettings, run_continual_model
from experiments.kinds.registry import load_kind_module, model_kind_names, unregister_model_kind
from experiments.kinds.routers import build_router, router_label
from experiments.runner.specs import ModelSpec

pytestmark = pytest.mark.usefixtures("one_thread")

EXAMPLE = pathlib.Path(__file__).parents[3] / "examples" / "own_router.py"


@pytest.fixture
def hash_moe():
    names = load_kind_module(EXAMPLE)
    try:
        yield names
    finally:
        for name in names:
            if name in model_kind_names():
                unregister_model_kind(name)


def _tiny(seed, n):
    """Separable 10-class data on 16 non-negative features (class c: a bump at c)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(10), n // 10)
    X = rng.uniform(0, 0.2, (len(y), 16)).astype(np.float32)
    X[np.arange(len(y)), y] += 1.0
    return X, y


def test_the_examples_router_runs_in_a_sweep_and_in_the_harness(hash_moe):
    assert hash_moe == ["hash_moe"] and router_label("hash_moe") == "hash layer"
    layer = build_router(ModelSpec("hash_moe", width=16, k=4, n_experts=4), 8, seed=0)
    assert layer(torch.rand(3, 8))[0].shape == (3, 1)  # the sweep's d_out = 1
    assert MODELS["hash layer"].kind == "hash_moe"  # a harness model with its defaults
    X, y = _tiny(0, 60)
    Xt, yt = _tiny(1, 30)
    s = ContinualSettings(n_neurons=16, k=4, n_experts=4, epochs_per_task=2,
                          evals_per_task=1)
    row = run_continual_model("hash_moe", (X, y, Xt, yt), s, seed=0)
    assert 0.0 <= row["final_accuracy"] <= 1.0 and row["model"] == "hash_moe"
    assert np.isfinite(np.array(json.loads(row["acc_matrix"]), dtype=float)).all()
    # its expert count matched to the ReLU MLP's 442: 4 experts of 4 units are 4·(16·4 +
    # 4·10) = 416 parameters, -5.9 %, 5 are 520, +17.6 %: not matched, and it says why
    reference = (16 + 1) * 16 + (16 + 1) * 10
    assert row["relu_mlp_params"] == reference and json.loads(row["size"]) == {"n_experts": 4}
    assert row["params"] == 416 and not row["params_matched"]
    assert "not matched: one step of n_experts moves the count by 104" in row["sizing"]
    assert (row["optimizer"], row["lr"]) == ("adam", 1e-2)  # the layer's own rule
    # the threshold: at ±6 % the same size reads matched
    loose = ContinualSettings(n_neurons=16, k=4, n_experts=4, param_tolerance=0.06)
    assert MODELS["hash_moe"].match(16, 10, loose)["matched"]


def test_the_examples_router_runs_in_the_continual_experiment(tmp_path):
    from experiments.cli import main

    try:
        result = CliRunner().invoke(main, ["scale", "--module", str(EXAMPLE), "--experiment",
                                           "continual", "--preset", "tiny", "--seeds", "0",
                                           "--out", str(tmp_path), "--device", "cpu"])
    finally:
        if "hash_moe" in model_kind_names():
            unregister_model_kind("hash_moe")
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(tmp_path / "results.csv")
    mine = rows[rows["model"] == "hash_moe"]
    assert list(mine["model_label"]) == ["hash layer"]
    assert 0.0 <= mine["final_accuracy"].iloc[0] <= 1.0
    assert bool(mine["params_matched"].iloc[0]) or "not matched:" in mine["sizing"].iloc[0]
    assert len(rows) == 13  # the 12 built-in models and the user's
