"""The one model interface: the registry, contract tests run over every registered
kind (as scikit-learn's ``check_estimator``), a user's own router registered and swept, and a
tiny sweep of every built-in kind equal to the one recorded before the refactor."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pandas as pd
import pytest
import torch

from experiments.kinds.routers import RouterKind
from experiments.kinds.registry import (
    FIT_REGIMES,
    SPEC_FIELDS,
    ModelKind,
    model_kind,
    model_kind_names,
    register_model_kind,
    unregister_model_kind,
)
from experiments.runner.specs import MODEL_KINDS, ExperimentConfig, ModelSpec, TargetSpec, fit_of
from experiments.runner.sweep import run_sweep
from experiments.runner.rows import run_model, with_current_fits

GOLDEN = pathlib.Path(__file__).parents[2] / "data" / "tiny_sweep_all_kinds.csv"


def _config(models=(), fit="exact", **changes) -> ExperimentConfig:
    base = dict(name="contract", preset="test", target=TargetSpec(n_inputs=4, degree=2),
                models=tuple(models), seeds=(0,), n_train=128, n_eval=64, fit=fit,
                train_steps=10, train_batch=32)
    base.update(changes)
    return ExperimentConfig(**base)


def test_builtin_kinds_are_registered_in_order():
    assert model_kind_names()[:len(MODEL_KINDS)] == MODEL_KINDS


#: Every kind registered on import: the built-in ones and Bricken et al.'s baselines that the
#: continual harness builds from the same registry (topk_mlp, sdmlp_mask).
ALL_KINDS = model_kind_names()


def test_the_continual_baselines_are_routers_registered_after_the_builtin_kinds():
    assert ALL_KINDS[len(MODEL_KINDS):] == ("topk_mlp", "sdmlp_mask")


@pytest.mark.parametrize("name", ALL_KINDS)
@pytest.mark.parametrize("fit", ["exact", "adam"])
def test_contract_every_kind(name, fit):
    """Every kind builds from its example spec, fits under a regime it supports, and
    reports a complete, finite row; the same seed gives the same numbers."""
    kind = model_kind(name)
    assert kind.name == name and set(kind.regimes) <= set(FIT_REGIMES) and kind.description
    spec = ModelSpec(name, **kind.example)
    config = _config([spec], fit=fit)
    assert fit_of(spec, config) == (fit if fit in kind.regimes else kind.regimes[0])
    data = config.make_data(0)
    rows = [run_model(spec, config, data, 0, torch.device("cpu")) for _ in range(2)]
    row = rows[0]
    for column in ("train_mse", "eval_mse", "linf_error", "train_nmse", "eval_nmse"):
        assert math.isfinite(row[column]) and row[column] >= 0, column
    assert row["eval_mse"] <= row["linf_error"] ** 2 + 1e-12  # a mean is at most the max
    for column in ("activated_units", "params", "flops_paper", "flops_true"):
        assert int(row[column]) >= 1, column
    assert row["model"] == name and row["fit"] == fit_of(spec, config)
    assert row["device"] == "cpu"
    same = {k: v for k, v in rows[1].items() if k != "wall_s"}
    assert same == {k: v for k, v in row.items() if k != "wall_s"}


@pytest.mark.parametrize("name", ALL_KINDS)
def test_contract_refuses_fields_a_kind_does_not_read(name):
    kind = model_kind(name)
    unread = [f for f in SPEC_FIELDS if f not in kind.fields and f not in ("family", "options")]
    field = unread[0] if unread else "options"
    value = {"width": 8, "k": 2, "n_bits": 3, "n_tables": 2, "n_hashes": 2,
             "bucket_width": 1.0, "n_experts": 2, "options": {"x": 1}}[field]
    with pytest.raises(ValueError, match=f"{field}=.* is not a parameter of model kind '{name}'"):
        ModelSpec(name, **{**kind.example, field: value})


def test_unknown_kind_names_the_registered_ones():
    with pytest.raises(ValueError, match="model kind must be one of .*'dense'.*got 'dens'") \
            as error:
        ModelSpec("dens", width=4)
    # and how to add one's own kind
    assert "--module FILE.py" in str(error.value) and "examples/own_router.py" in str(error.value)


def test_register_checks_its_argument():
    with pytest.raises(TypeError, match="ModelKind"):
        register_model_kind(object())
    bad = RouterKind("bad_regimes", lambda *a: None)
    bad.regimes = ("closed_form",)
    with pytest.raises(ValueError, match="regimes"):
        register_model_kind(bad)
    with pytest.raises(ValueError, match="registered already"):
        register_model_kind(RouterKind("dense", lambda *a: None))
    with pytest.raises(ValueError, match="no model kind"):
        unregister_model_kind("never_registered")



def _hash_layer(d_in, d_out, seed, epochs, width):
    from routing.layers import DenseMLP, DenseMLPConfig

    return DenseMLP(DenseMLPConfig(d_in=d_in, width=width, d_out=d_out, seed=seed))


def test_a_users_router_registers_and_sweeps_beside_the_builtin_ones(tmp_path):
    kind = register_model_kind(RouterKind("my_dense", _hash_layer, fields=("width",),
                                          example={"width": 8}))
    try:
        assert "my_dense" in model_kind_names()
        config = _config([ModelSpec("my_dense", width=8), ModelSpec("dense_mlp", width=8)],
                         fit="exact")
        table = run_sweep([config], tmp_path, device="cpu", progress=False)
        assert list(table["model"]) == ["my_dense", "dense_mlp"]
        assert set(table["fit"]) == {"end_to_end"}
        # the same layer, seed and data: the user's kind reproduces the built-in one exactly
        a, b = (table.drop(columns=["model", "model_label", "model_key", "k", "wall_s"])
                .iloc[i] for i in (0, 1))
        pd.testing.assert_series_equal(a, b, check_names=False)
    finally:
        unregister_model_kind(kind.name)
    with pytest.raises(ValueError, match="model kind must be one of"):
        ModelSpec("my_dense", width=8)


def test_options_reach_a_users_kind_and_key_the_rows():
    seen = {}

    class Scaled(ModelKind):
        name = "scaled_mean"
        regimes = ("exact",)
        fields = ("options",)
        description = "predicts options['scale'] × the training mean"

        def build(self, spec, dim, seed, config):
            return {"scale": spec.option("scale", 1.0)}

        def to_device(self, model, device):
            return model

        def fit(self, model, spec, config, X, y, regime, seed):
            seen["regime"] = regime
            model["value"] = model["scale"] * float(np.mean(y))
            return float(np.mean((model["value"] - y) ** 2))

        def evaluate(self, model, X, y):
            error = model["value"] - y
            return {"mse": float(np.mean(error**2)), "linf": float(np.max(np.abs(error)))}

        def describe(self, model, spec, X):
            return {"activated_units": 1, "params": 1, "flops_paper": 0, "flops_true": 0}

    register_model_kind(Scaled())
    try:
        spec = ModelSpec("scaled_mean", options={"scale": 0.0})
        assert spec.key() == "scaled_mean;n_tables=1;options=(('scale', 0.0),)"
        config = _config([spec], fit="adam")
        X, y, X_eval, y_eval = data = config.make_data(0)
        row = run_model(spec, config, data, 0, torch.device("cpu"))
        assert seen["regime"] == "exact" and row["fit"] == "exact"
        assert row["eval_mse"] == pytest.approx(float(np.mean(y_eval**2)))
        # round trip through config.json's form
        again = ExperimentConfig.from_dict(config.to_dict())
        assert again.models[0] == spec
    finally:
        unregister_model_kind("scaled_mean")


def test_tiny_sweep_equals_the_one_recorded_before_the_registry(tmp_path):
    """``tests/data/tiny_sweep_all_kinds.csv`` was written by the sweep before the model
    registry (commit bbbe1a3) on the machine that wrote this test, where the refactored sweep
    reproduces it bit for bit. Other CPUs may round float32 kernels differently: float
    columns are compared to 1e-5 relative (any change of behaviour moves them far more)."""
    # written before the regimes' rename: its "sgd" rows are read under today's names
    golden = with_current_fits(pd.read_csv(GOLDEN, dtype={"settings": str}))
    S = ModelSpec
    models = (S("dense", width=16), S("dsm", width=32, k=4), S("random_hash", width=32, k=4),
              S("lsh", n_bits=3, n_tables=2), S("lsh", n_bits=3, family="affine"),
              S("lsh", n_bits=3, family="euclidean", n_hashes=2, bucket_width=1.0),
              S("lsh", n_bits=4, family="uniform"),
              S("lsh_table", n_hashes=2, bucket_width=1.0, n_tables=2),
              S("comet", width=16, k=4), S("sigma_moe", width=16, k=8, n_experts=4),
              S("topk_moe", width=16, k=8, n_experts=4), S("pkm", width=16, k=4),
              S("smear", width=16, k=4, n_experts=4), S("sdmlp", width=16, k=4),
              S("dense_mlp", width=8))
    frames = []
    for fit in ("exact", "adam"):
        config = ExperimentConfig(name="tiny_all_kinds", preset="test",
                                  target=TargetSpec(n_inputs=4, degree=2), models=models,
                                  seeds=(0, 1), n_train=256, n_eval=128, fit=fit,
                                  train_steps=20, train_batch=64)
        run_sweep([config], tmp_path / fit, device="cpu", progress=False)
        frames.append(pd.read_csv(tmp_path / fit / "results.csv", dtype={"settings": str}))
    now = pd.concat(frames).drop(columns=["wall_s"]).reset_index(drop=True)
    golden = golden[now.columns].reset_index(drop=True)
    floats = [c for c in now.columns if now[c].dtype.kind == "f" and c not in
              ("width", "k", "buckets", "nonempty_buckets")]
    pd.testing.assert_frame_equal(now.drop(columns=floats), golden.drop(columns=floats),
                                  check_dtype=False)
    pd.testing.assert_frame_equal(now[floats], golden[floats], rtol=1e-5, atol=0)
