"""The routers of ``routing.layers`` (COMET, σ-MoE, top-k MoE, PKM, SMEAR, SDMLP) in the
experiment harness: specs, building, training, sweeps."""

import numpy as np
import pandas as pd
import pytest
import torch

from experiments.papers.catalogue import experiment_configs
from experiments.papers.router_study import ROUTER_LABELS
from experiments.kinds.routers import build_router
from experiments.kinds.router_training import (
    RouterRegressor,
    RouterTraining,
    evaluate_router,
    train_router,
)
from experiments.runner.specs import ROUTER_KINDS, ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.sweep import run_sweep

N_EXPERTS = {"sigma_moe": 4, "topk_moe": 4, "smear": 4}


def _spec(kind, width=64, k=16):
    if kind == "dense_mlp":  # the dense baseline at the routers' k activated units
        return ModelSpec(kind, width=k)
    return ModelSpec(kind, width=width, k=k, n_experts=N_EXPERTS.get(kind))


def _data(n=2048, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.uniform(-1, 1, (n, 8)).astype(np.float32)
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2]
    return X, y


@pytest.mark.parametrize("kind", ROUTER_KINDS)
def test_built_routers_have_the_matched_sizes(kind):
    layer = build_router(_spec(kind), dim=8, seed=0, epochs=4)
    layer.set_training_progress(4)  # SDMLP: annealing over (k reaches k_target)
    assert layer.activated_units == 16
    assert layer.total_units == 64
    y, aux = layer(torch.zeros(3, 8))
    assert y.shape == (3, 1) and all(v.ndim == 0 for v in aux.values())


@pytest.mark.parametrize("kwargs, name", [
    (dict(kind="sigma_moe", width=64, k=16, n_experts=5), "n_experts"),
    (dict(kind="topk_moe", width=64, k=6, n_experts=4), "expert size"),
    (dict(kind="smear", width=64, k=8, n_experts=4), "expert size"),
    (dict(kind="pkm", width=60, k=8), "square"),
    (dict(kind="comet", width=8, k=9), "k"),
    (dict(kind="sdmlp", width=8, k=2, lr=-1.0), "lr"),
])
def test_router_specs_reject_inconsistent_shapes(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ModelSpec(**kwargs)


@pytest.mark.parametrize("kind", ["topk_moe", "comet", "dense_mlp"])
def test_training_lowers_the_error_well_below_the_variance(kind):
    X, y = _data()
    model = RouterRegressor(build_router(_spec(kind), 8, seed=0))
    before = evaluate_router(model, X, y, count_usage=False)["mse"]
    report = train_router(model, X, y, RouterTraining(steps=300, batch_size=128, lr=3e-3))
    after = evaluate_router(model, X, y, count_usage=False)["mse"]
    assert report.train_mse == pytest.approx(after)
    assert after < 0.3 * np.var(y) and after < 0.5 * before


def test_standardisation_makes_training_invariant_to_the_target_scale():
    """Training on a·y + b gives predictions a·p + b (same seed): errors scale by a²."""
    X, y = _data(1024)
    a, b = 1e-3, 5.0
    runs = []
    for target in (y, a * y + b):
        model = RouterRegressor(build_router(_spec("sigma_moe"), 8, seed=1))
        train_router(model, X, target, RouterTraining(steps=40, batch_size=128), seed=3)
        with torch.no_grad():
            runs.append(model(torch.from_numpy(X)).numpy())
    np.testing.assert_allclose(runs[1], a * runs[0] + b, rtol=1e-5, atol=1e-6 * a)


def test_training_is_deterministic_given_the_seeds():
    X, y = _data(1024)
    preds = []
    for _ in range(2):
        model = RouterRegressor(build_router(_spec("pkm"), 8, seed=2))
        train_router(model, X, y, RouterTraining(steps=30, batch_size=64), seed=5)
        with torch.no_grad():
            preds.append(model(torch.from_numpy(X)))
    assert torch.equal(preds[0], preds[1])


def test_evaluation_utilisation_matches_the_routes():
    X, y = _data(512)
    model = RouterRegressor(build_router(_spec("topk_moe", width=64, k=16), 8, seed=0))
    metrics = evaluate_router(model, X, y)
    idx, _ = model.layer.route(torch.from_numpy(X))
    usage = torch.bincount(idx.reshape(-1), minlength=4).double() / len(X)
    assert metrics["dead_fraction"] == pytest.approx(float((usage == 0).double().mean()))
    assert metrics["usage_cv"] == pytest.approx(float(usage.std(unbiased=False) / usage.mean()))
    np.testing.assert_allclose(model.layer.utilisation().numpy(), usage.numpy())


def test_sdmlp_weights_stay_projected_through_training():
    X, y = _data(1024)
    layer = build_router(_spec("sdmlp"), 8, seed=0, epochs=4)
    train_router(RouterRegressor(layer), X, y, RouterTraining(steps=64, batch_size=64))
    W = layer.encoder if hasattr(layer, "encoder") else next(layer.parameters())
    assert bool((W >= 0).all())
    np.testing.assert_allclose(W.norm(dim=1).detach().numpy(), 1.0, rtol=1e-5)
    assert layer.activated_units == 16  # k annealed to k_target by the last epoch


def test_bad_training_input_is_refused_with_the_parameter_name():
    model = RouterRegressor(build_router(_spec("comet"), 8, seed=0))
    X, y = _data(64)
    with pytest.raises(ValueError, match="X must have shape"):
        train_router(model, X[:, :5], y)
    with pytest.raises(ValueError, match="y must be finite"):
        train_router(model, X, np.full(64, np.nan))
    with pytest.raises(ValueError, match="steps"):
        RouterTraining(steps=0)
    with pytest.raises(ValueError, match="optimizer"):
        RouterTraining(optimizer="lbfgs")
    with pytest.raises(ValueError, match="d_out"):
        from routing.layers import COMET, COMETConfig
        RouterRegressor(COMET(COMETConfig(d_in=8, widths=(8,), d_out=2)))


def test_router_sweep_rows_and_resume(tmp_path):
    models = tuple(_spec(kind) for kind in ("comet", "topk_moe")) + (
        ModelSpec("dsm", width=64, k=16, label="DSM"),)
    config = ExperimentConfig(name="routers", preset="tiny", target=TargetSpec("polynomial"),
                              models=models, seeds=(0,), n_train=512, n_eval=256,
                              train_steps=20, train_batch=64)
    frame = run_sweep([config], tmp_path, device="cpu", progress=False)
    by_kind = frame.set_index("model")
    assert list(by_kind.loc[["comet", "topk_moe"], "fit"]) == ["end_to_end", "end_to_end"]
    assert by_kind.loc["dsm", "fit"] == "exact" and pd.isna(by_kind.loc["dsm", "dead_fraction"])
    assert by_kind.loc["comet", "activated_units"] == 16
    assert 0 <= by_kind.loc["topk_moe", "dead_fraction"] <= 1
    rerun = []
    again = run_sweep([config], tmp_path, device="cpu", progress=False, on_row=rerun.append)
    assert rerun == [] and len(again) == 3  # every row was on disk: nothing retrained
    pd.testing.assert_frame_equal(again.drop(columns="wall_s").astype(str),
                                  pd.read_csv(tmp_path / "results.csv").drop(columns="wall_s")
                                  .astype(str))
    np.testing.assert_allclose(again["eval_mse"], frame["eval_mse"])


def test_routers_preset_matches_activated_units_across_models():
    for config in experiment_configs("routers", "quick"):
        kinds = {m.kind for m in config.models}
        assert set(ROUTER_LABELS) <= kinds and {"dense", "dense_mlp", "dsm", "lsh"} <= kinds
        for a in (16, 64, 256):
            sparse = [m for m in config.models if m.k == a and m.kind != "dense_mlp"]
            assert {m.width for m in sparse} == {4 * a}
            assert len(sparse) == 1 + len(ROUTER_LABELS)  # DSM and every router
            # both dense baselines have the routers' a activated units as their width
            dense = [m for m in config.models if m.kind in ("dense", "dense_mlp")
                     and m.width == a]
            assert sorted(m.kind for m in dense) == ["dense", "dense_mlp"]
