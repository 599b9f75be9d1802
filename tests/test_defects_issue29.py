"""One test per defect found by fuzzing and by comparison with the papers' code.

Each test fails on the code before the fix: a silent wrong answer, a hang, a NaN/inf from
finite input, or an error that blamed the wrong parameter (or came from deep inside).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch

from experiments.kinds.fitting import SGDConfig, evaluate, fit_model
from routing.models import Dense
from experiments.kinds.router_training import RouterRegressor, RouterTraining, evaluate_router, train_router
from lipschitz import (RandomMLP, RandomPolynomial, UniformCube, dataset_config, estimate_lipschitz,
                       load_dataset, save_dataset)
from routing import (CrossPolytopeLSH, EuclideanLSH, LSHTable, clopper_pearson,
                     collision_probability_cross_polytope, collision_probability_euclidean,
                     pairs_at_angles, pairs_at_distances)
from routing.layers import PKM, SDMLP, PKMConfig, SDMLPConfig, SigmaMoE, SigmaMoEConfig
from routing.sdm import cap_fraction, cap_intersection_fraction, circle_intersection, snr_optimal_radius
from routing.sdm import space_fraction
from routing.torch_twins import TorchEuclideanLSH
from routing.validation import check_bool, check_seed

pytestmark = pytest.mark.usefixtures("one_thread")

RNG = np.random.default_rng(0)
X2 = RNG.uniform(-1, 1, (40, 2))


# ---------------------------------------------------------------- silent wrong answers
class _NaNModel(Dense):
    def forward(self, X):
        return super().forward(X) * float("nan")


def test_evaluate_never_hides_nan_predictions():
    model = _NaNModel(2, 4, seed=0)
    fit_model(Dense(2, 4, seed=0), X2, X2.sum(1))
    with pytest.raises(ValueError, match="model gives 40 NaN"):
        evaluate(model, X2, X2.sum(1))


def test_diverged_sgd_fit_raises_naming_lr():
    model = Dense(2, 8, seed=0)
    with pytest.raises(ValueError, match="lr=1e\\+30"):
        fit_model(model, X2, X2.sum(1), fit="sgd", sgd=SGDConfig(lr=1e30, steps=20))
    # the same fit at a sane lr is finite: the threshold is the divergence, not SGD itself
    report = fit_model(Dense(2, 8, seed=0), X2, X2.sum(1), fit="sgd", sgd=SGDConfig(steps=20))
    assert math.isfinite(report.train_mse)


def test_train_router_divergence_blames_lr_not_x():
    layer = SigmaMoE(SigmaMoEConfig(d_in=2, n_experts=4, expert_size=4, k=2, seed=0))
    with pytest.raises(ValueError, match="lr=1e\\+30"):
        train_router(RouterRegressor(layer), X2, X2.sum(1), RouterTraining(steps=20, lr=1e30))
    model = RouterRegressor(SigmaMoE(SigmaMoEConfig(d_in=2, n_experts=4, expert_size=4, k=2)))
    train_router(model, X2, X2.sum(1), RouterTraining(steps=5))
    assert math.isfinite(evaluate_router(model, X2, X2.sum(1))["linf"])


@pytest.mark.parametrize("call", [
    lambda flag: circle_intersection(16, 3, 2, log=flag),
    lambda flag: cap_fraction(8, 0.5, log=flag),
    lambda flag: cap_intersection_fraction(8, 0.5, 0.9, log=flag),
    lambda flag: space_fraction(16, 3, log=flag),
    lambda flag: EuclideanLSH(2, 2, 1.0).bucket_ids(X2, add=flag),
    lambda flag: LSHTable(EuclideanLSH(2, 1, 1.0)).fit(X2, X2[:, 0]).predict(X2, return_empty=flag),
], ids=["circle_intersection", "cap_fraction", "cap_intersection", "space_fraction",
        "bucket_ids", "predict"])
def test_string_flags_are_refused_not_read_by_truthiness(call):
    with pytest.raises(ValueError, match="must be True or False, got 'False'"):
        call("False")
    call(np.bool_(False))  # numpy bools are bools


def test_bucket_ids_add_false_leaves_the_codebook_unchanged():
    hasher = EuclideanLSH(2, 2, 0.1)
    with pytest.raises(ValueError, match="add"):
        hasher.bucket_ids(X2, add="False")
    assert hasher.n_buckets_seen() == 0


def test_check_bool_accepts_numpy_bool_only():
    assert check_bool(np.bool_(True), "flag") is True
    for bad in ("True", 1, 0, None):
        with pytest.raises(ValueError, match="flag"):
            check_bool(bad, "flag")


def test_monomial_features_checks_its_input():
    p = RandomPolynomial(4, 2)
    X = RNG.uniform(-1, 1, (3, 4))
    np.testing.assert_allclose(p.monomial_features(X) @ p.coefficients, p(X), rtol=1e-12)
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        p.monomial_features(np.ones((3, 5)))
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        p.monomial_features(np.ones(4))


@pytest.mark.parametrize("kwargs, match", [
    ({"n_samples": 2.7}, "n_samples"), ({"n_samples": -3}, "n_samples"),
    ({"noise_std": float("nan")}, "noise_std"), ({"dim": 5}, "distribution.dim"),
])
def test_dataset_config_checks_what_make_dataset_checks(kwargs, match):
    args = {"n_samples": 3, "noise_std": 0.0, "dim": 4} | kwargs
    with pytest.raises(ValueError, match=match):
        dataset_config(RandomPolynomial(4, 2), UniformCube(args["dim"]), args["n_samples"],
                       noise_std=args["noise_std"])
    assert dataset_config(RandomPolynomial(4, 2), UniformCube(4), 3)["n_samples"] == 3


def test_torch_euclidean_twin_refuses_mismatched_parameters():
    with pytest.raises(ValueError, match=r"offsets must have shape \(2, 3\)"):
        TorchEuclideanLSH(torch.randn(2, 3, 4), torch.rand(3, 2), 1.0)
    codes = TorchEuclideanLSH(torch.randn(2, 3, 4), torch.rand(2, 3), 1.0)(torch.randn(5, 4))
    assert codes.shape == (5, 2, 3)


# ---------------------------------------------------------------- hangs
def test_pairs_at_distances_with_no_columns_raises_instead_of_hanging():
    with pytest.raises(ValueError, match="at least 1 column"):
        pairs_at_distances(np.zeros((3, 0)), 0.5)


def test_snr_optimal_radius_is_fast_at_a_million_bits():
    start = time.perf_counter()
    d = snr_optimal_radius(10**6, 1000, 100)
    assert time.perf_counter() - start < 5.0  # was over 30 s (quadratic big-integer sums)
    p_star = (2.0 * 100 * 1000) ** (-1 / 3)
    assert space_fraction(10**6, d) >= p_star > space_fraction(10**6, d - 1)


# ---------------------------------------------------------------- NaN or inf from finite input
def test_lsh_table_refuses_data_whose_sums_overflow():
    with pytest.raises(ValueError, match="y is too large"):
        LSHTable(EuclideanLSH(2, 1, 1.0)).fit(X2, np.full(40, 1e308))
    with pytest.raises(ValueError, match="X is too large for degree=2"):
        LSHTable(EuclideanLSH(2, 1, 1e200), 2).fit(X2 * 1e160, X2[:, 0])
    with pytest.raises(ValueError, match="X is too large for degree=1"):
        LSHTable(EuclideanLSH(2, 1, 1e200), 1).fit(X2 * 1e155, X2[:, 0])
    table = LSHTable(EuclideanLSH(2, 1, 1e200), 1).fit(X2 * 1e100, X2[:, 0])  # just below
    assert np.isfinite(table.predict(X2 * 1e100)).all()


def test_targets_refuse_points_outside_their_domain():
    f = RandomPolynomial(2, 4)
    with pytest.raises(ValueError, match=r"domain \[-1, 1\]\^n.*1e\+100"):
        f(np.array([[1e100, 0.5]]))
    with pytest.raises(ValueError, match=r"domain"):
        f.torch(torch.tensor([[1.5, 0.5]]))
    assert np.isfinite(f(np.array([[1.0, -1.0]]))).all()  # the boundary is inside


def test_collision_probability_euclidean_at_extreme_ratio():
    assert collision_probability_euclidean(1e308, 1e-308) == 0.0
    assert collision_probability_euclidean(1e-308, 1e308) == 1.0
    small = collision_probability_euclidean(1e6, 1e-3)  # series and closed form agree
    assert small == pytest.approx(math.sqrt(2 / math.pi) * 1e-9 / 2, rel=1e-9)


def test_pairs_at_angles_does_not_overflow_on_large_finite_rows():
    X = np.full((2, 3), 1e300)
    X2_ = pairs_at_angles(X, 1.0)
    cos = np.einsum("nd,nd->n", X / 1e300, X2_ / 1e300) / 3.0
    np.testing.assert_allclose(cos, math.cos(1.0), rtol=1e-12)
    with pytest.raises(ValueError, match="X is too large"):
        pairs_at_angles(np.full((2, 3), 1.7e308), 1.0)


# ---------------------------------------------------------------- errors that blamed the wrong thing
@pytest.mark.parametrize("k", [0, 65, 2.5, "8"])
def test_sdmlp_extra_state_names_current_k(k):
    layer = SDMLP(SDMLPConfig(d_in=2, n_neurons=64, k_target=4))
    with pytest.raises(ValueError, match="current_k"):
        layer.set_extra_state({"current_k": k})
    layer.set_extra_state({"current_k": 8})
    assert layer.current_k == 8


def test_estimate_lipschitz_on_huge_points_names_the_domain():
    X = np.array([[1e308, 1e308], [-1e308, 1e308], [0.0, 1.0]])
    with pytest.raises(ValueError, match="domain"):
        estimate_lipschitz(RandomMLP(2, (4,)), X, 1)


def test_tensor_requiring_grad_is_accepted_by_numpy_functions():
    X = torch.tensor(X2, requires_grad=True)
    table = LSHTable(EuclideanLSH(2, 1, 0.5)).fit(X, X2.sum(1))
    np.testing.assert_array_equal(table.predict(X), table.predict(X2))
    assert circle_intersection(16, 3, torch.tensor([1, 2])).shape == (2,)


def test_seed_beyond_int64_is_refused_at_the_config():
    with pytest.raises(ValueError, match="seed"):
        SDMLPConfig(d_in=2, n_neurons=8, k_target=2, seed=2**64)
    assert check_seed(2**63 - 1) == 2**63 - 1


def test_save_dataset_refuses_what_load_dataset_cannot_read(tmp_path):
    with pytest.raises(ValueError, match="X must be a real-valued array"):
        save_dataset(tmp_path / "x.npz", np.array([[1, "a"]], dtype=object), np.array([1.0]), {})
    assert not (tmp_path / "x.npz").exists()
    with pytest.raises(ValueError, match="config must be JSON"):
        save_dataset(tmp_path / "x.npz", np.ones((1, 2)), np.array([1.0]), {"a": object()})
    save_dataset(tmp_path / "x.npz", np.ones((1, 2)), np.array([1.0]), {"a": 1})
    assert load_dataset(tmp_path / "x.npz")[2] == {"a": 1}


# ---------------------------------------------------------------- against the papers' code
def test_gaba_switch_fully_on_trains_exactly_k_neurons():
    """Bricken et al. 2023, Eq. 12 with λ = 1 for every neuron: a* = [a − I]_+ with I the
    (k+1)-th activation. The (k+1)-th neuron outputs exactly 0 and must not learn."""
    k, n = 3, 16
    layer = SDMLP(SDMLPConfig(d_in=4, n_neurons=n, k_target=k, gaba_switch=True,
                              gaba_switch_activations=1)).double()
    layer.gaba_counts.fill_(10.0)  # every neuron fully inhibited: λ_i = 1
    x = torch.rand(1, 4, dtype=torch.float64) + 0.1  # positive: every activation > 0
    y, _ = layer(x)
    y.sum().backward()
    learning = int((layer.encoder.grad.abs().sum(dim=1) > 0).sum())
    assert learning == k  # was k + 1: clamp(min=0) passes gradient at exactly 0
    h, active = layer.hidden(x)
    assert int(active.sum()) == k and int((h > 0).sum()) == k


def test_pkm_dense_small_keys_is_the_reference_dense_read():
    """Csordás et al.'s code (no_knn when n_keys <= knn): y = Σ over all n² slots of
    relu(u_b[i // n] + u_a[i mod n]) · v_i; the default keeps the top k of n² slots."""
    n, k = 4, 5
    x = torch.randn(6, 8, dtype=torch.float64)
    dense = PKM(PKMConfig(d_in=8, n_keys=n, k=k, dense_small_keys=True)).double()
    u = torch.einsum("bhd,hnd->bhn", x.reshape(6, 2, 4), dense.keys)
    expected = torch.zeros(6, 1, dtype=torch.float64)
    for i in range(n * n):
        expected += torch.relu(u[:, 1, i // n] + u[:, 0, i % n])[:, None] * dense.values[i]
    torch.testing.assert_close(dense(x)[0], expected)
    assert dense.activated_units == n * n
    sparse = PKM(PKMConfig(d_in=8, n_keys=n, k=k)).double()  # default unchanged: top k
    assert sparse.activated_units == k
    assert not torch.allclose(sparse(x)[0], expected)
    big = PKM(PKMConfig(d_in=8, n_keys=8, k=5, dense_small_keys=True))  # n_keys > k: sparse
    assert not big.dense and big.activated_units == 5


# ---------------------------------------------------------------- cross-polytope collisions
def _gaussian_monte_carlo(theta: float, dim: int, n: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((n, dim))
    v = math.cos(theta) * u + math.sin(theta) * rng.standard_normal((n, dim))
    iu, iv = np.abs(u).argmax(1), np.abs(v).argmax(1)
    rows = np.arange(n)
    return int(((iu == iv) & (np.sign(u[rows, iu]) == np.sign(v[rows, iv]))).sum())


@pytest.mark.parametrize("theta, dim", [(0.3, 2), (1.0, 4), (1.0, 16), (2.0, 16)])
def test_cross_polytope_probability_matches_gaussian_monte_carlo(theta, dim):
    n = 40_000
    hits = _gaussian_monte_carlo(theta, dim, n, seed=dim)
    low, high = clopper_pearson(hits, n, 0.999)
    assert low <= collision_probability_cross_polytope(theta, dim) <= high


def test_cross_polytope_probability_edge_cases():
    assert collision_probability_cross_polytope(0.0, 8) == 1.0
    assert collision_probability_cross_polytope(math.pi, 8) == 0.0
    # d = 1: the sign hash, 1 − θ/π
    assert collision_probability_cross_polytope(1.0, 1) == pytest.approx(1 - 1 / math.pi)
    p = collision_probability_cross_polytope(np.array([0.5, 1.0]), 16, n_hashes=2)
    np.testing.assert_allclose(p, collision_probability_cross_polytope(np.array([0.5, 1.0]), 16) ** 2)
    with pytest.raises(ValueError, match="theta"):
        collision_probability_cross_polytope(4.0, 8)
    with pytest.raises(ValueError, match="dim"):
        collision_probability_cross_polytope(1.0, 0)


def test_cross_polytope_probability_matches_cross_polytope_lsh():
    """The pseudo-random rotation of CrossPolytopeLSH at d = 64: the collision count of each
    pair over 3000 tables falls in the 99.9 % Clopper–Pearson interval around the formula."""
    hasher = CrossPolytopeLSH(64, 1, n_tables=3000, seed=3)
    X = np.random.default_rng(0).standard_normal((3, 64))
    for theta in (0.5, 1.0):
        same = (hasher.hash(X) == hasher.hash(pairs_at_angles(X, theta, seed=1)))[:, :, 0]
        low, high = clopper_pearson(same.sum(1), 3000, 0.999)
        p = collision_probability_cross_polytope(theta, hasher.padded_dim)
        assert np.all((low <= p) & (p <= high))


def test_cross_polytope_probability_follows_andoni_theorem_1():
    """Andoni et al. 2015, Theorem 1: ln(1/p) = τ²/(4 − τ²)·ln d + O(ln ln d), τ = 2 sin(θ/2),
    i.e. ln(1/p)/ln d → tan²(θ/2). The gap shrinks as d grows, and stays O(ln ln d); the
    brief's (1/4)·tan² would be refuted by a factor of 4."""
    theta = math.pi / 3
    exponent = math.tan(theta / 2) ** 2
    assert exponent == pytest.approx(1.0 / 3.0)  # τ = 1: τ²/(4 − τ²) = 1/3
    gaps = []
    for log2_d in (10, 20, 40):
        d = 2**log2_d
        ratio = math.log(1 / collision_probability_cross_polytope(theta, d)) / math.log(d)
        gaps.append(ratio - exponent)
        assert 0 < (ratio - exponent) * math.log(d) / math.log(math.log(d)) < 2.0
    assert gaps[0] > gaps[1] > gaps[2] > 0
    assert abs(gaps[2]) < 0.06 and abs(ratio - exponent / 4) > 0.25


# ---------------------------------------------------------------- found by the fuzz suite (experiments, proofs_checks)
def test_child_seeds_refuse_salts_that_would_be_truncated():
    from proofs_checks import child_seeds
    assert child_seeds(0, 3, 2) == child_seeds(0, 3, np.int64(2))
    for salt in (True, 2.5, "2", -1):  # True and 2.5 were read as 1 and 2: another stream
        with pytest.raises(ValueError, match=r"salt\[0\]"):
            child_seeds(0, 3, salt)
    with pytest.raises(ValueError, match="n must be"):
        child_seeds(0, -1)  # was [] silently (state[:-1] of one seed)


def test_data_seeds_refuse_a_string_seed():
    from experiments.runner.specs import data_seeds
    assert data_seeds(3) == data_seeds(np.int64(3))
    for seed in ("3", 2.5, -1, True):  # "3" was accepted: numpy hashed another stream
        with pytest.raises(ValueError, match="seed"):
            data_seeds(seed)


def test_lipschitz_ratios_refuse_a_string_progress_flag():
    from experiments.analysis.gallery import GalleryConfig, lipschitz_ratios
    config = GalleryConfig(n_inputs=2, degree=2, hidden=(4,), n_seeds=1, n_points=10)
    with pytest.raises(ValueError, match="progress must be True or False, got 'False'"):
        lipschitz_ratios(config, progress="False")
    assert (lipschitz_ratios(config, progress=np.bool_(False))["ratio"] <= 1.0 + 1e-9).all()


def test_custom_target_with_few_probe_points_is_accepted():
    """n_probe = 2 on one input: 4 probe points (2 + the 2 corners). The probe asked for 4
    neighbours and failed with "n_neighbors must be an integer in [1, 3]", a parameter the
    user never gave."""
    from lipschitz import CustomTarget
    f = CustomTarget(lambda X: 0.5 * X.sum(1), 1, 1.0, n_probe=2)
    assert f.probe.value == pytest.approx(0.5)
    with pytest.raises(ValueError, match="lipschitz_bound"):  # the probe still decides
        CustomTarget(lambda X: 3.0 * X.sum(1), 1, 1.0, n_probe=2)


# ---------------------------------------------------------------- follow-up: the fuzz suite's KNOWN_DEFECTS
# Silent wrong answers and NaN from finite input first, then unchecked configs, then errors
# that named no parameter. Each test fails on the code before its fix.
import pathlib as _pathlib

import pandas as pd

_GOLDEN = _pathlib.Path(__file__).parent / "data" / "tiny_sweep_all_kinds.csv"


def _golden():
    return pd.read_csv(_GOLDEN, dtype={"settings": str})


def test_compare_refuses_an_unknown_label_instead_of_a_nan_effect():
    from experiments.analysis.claims import compare
    frame = _golden()
    with pytest.raises(ValueError, match="worse_label 'dense_MLP' has no rows"):
        compare("e", "t", frame, "dsm", "dense_MLP", "activated_units")
    with pytest.raises(TypeError, match="better_label must be a model label"):
        compare("e", "t", frame, 3, "dense", "activated_units")
    # known labels give a measured, finite effect, or "not tested" where they share no x
    assert math.isfinite(compare("e", "t", frame, "comet", "dense", "width").effect)
    assert compare("e", "t", frame, "dsm", "dense", "width").verdict == "not tested"


def test_lsh_description_refuses_a_label_without_rows_instead_of_an_empty_text():
    from experiments.analysis.claims import lsh_description
    assert lsh_description(_golden(), "lsh").startswith("LSH model lsh")
    with pytest.raises(ValueError, match="label 'LSH' has no rows"):
        lsh_description(_golden(), "LSH")


def test_pair_similarities_cosine_of_silent_activations_is_defined():
    from experiments.papers.comet_studies import _cosine, pair_similarities
    from routing.layers import COMET, COMETConfig
    a = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])
    b = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 0.0]])
    np.testing.assert_array_equal(_cosine(a, b), [1.0, 0.0, 1.0])  # both silent, one, same
    layer = COMET(COMETConfig(d_in=3, widths=(8, 8), d_out=2, p_k=0.25, seed=0))
    x = torch.full((4, 3), -50.0)  # far below every bias: few or no units active
    sims = pair_similarities(layer, x, torch.randn(4, 3, generator=torch.Generator().manual_seed(0)))
    assert np.isfinite(sims["activation_cosine"]).all()
    with pytest.raises(ValueError, match="x_b must have shape"):
        pair_similarities(layer, x, x[:3])


def test_forgetting_refuses_a_matrix_it_would_turn_into_nan():
    """(The joint oracle's forgetting is now 0, not nan: tests/experiments/kinds/test_continual.py.)"""
    from experiments.kinds.continual_harness import forgetting
    # the oracle's matrix: only its last row is measured; forgetting returned nan for it
    R = np.full((3, 3), np.nan)
    R[-1] = [0.9, 0.8, 0.7]
    with pytest.raises(ValueError, match="R must be finite"):
        forgetting(R)  # a public metric never reads a nan silently
    with pytest.raises(ValueError, match="R must have shape"):
        forgetting(np.ones(3))  # was IndexError
    with pytest.raises(ValueError, match="R must be a square"):
        forgetting(np.ones((2, 3)))


def test_table_rules_refuse_infinite_errors():
    from experiments.papers.baykal_tables import table1_rule, table2_rule
    assert table1_rule({"DSM": 0.5}, 1.0) == ("supported", "DSM")
    with pytest.raises(ValueError, match="dsm_at_smallest"):
        table1_rule({"DSM": float("inf")}, 1.0)  # was "not supported": an inf is no error
    assert table2_rule([(64.0, 1.4, 1.0)]) == ("supported", [64.0])
    with pytest.raises(ValueError, match="pairs"):
        table2_rule([(64.0, float("nan"), 1.0)])  # was "not supported"
    with pytest.raises(ValueError, match="values"):
        from experiments.analysis.claims import t_interval
        t_interval([1.0, float("nan"), 2.0])  # was dropped silently


@pytest.mark.parametrize("make, field", [
    (lambda: __import__("experiments.papers.sdm_curves", fromlist=["x"]).SdmCurvesConfig(weightings=(3,)), "weightings"),
    (lambda: __import__("experiments.papers.sdm_curves", fromlist=["x"]).SdmCurvesConfig(radii=(99,)), "radii"),
    (lambda: __import__("experiments.analysis.gallery", fromlist=["x"]).GalleryConfig(resolution="3"), "resolution"),
    (lambda: __import__("experiments.analysis.gallery", fromlist=["x"]).GalleryConfig(n_points=True), "n_points"),
], ids=["sdm-weighting", "sdm-radius", "gallery-resolution", "gallery-n_points"])
def test_configs_check_their_fields(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_experiment_config_checks_seeds_and_training_settings():
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
    base = dict(name="e", preset="tiny", target=TargetSpec(n_inputs=2, degree=1),
                models=(ModelSpec("dense", width=4),))
    assert ExperimentConfig(**base, seeds=[0, 1]).seeds == (0, 1)
    for bad in (3, (0, 0), ("0",), (-1,)):
        with pytest.raises(ValueError, match="seeds"):
            ExperimentConfig(**base, seeds=bad)
    with pytest.raises(ValueError, match="sgd_lr"):
        ExperimentConfig(**base, sgd_lr=float("inf"))


def test_real_data_configs_check_their_fields():
    from experiments.papers.real_data import experiment_config
    import dataclasses
    config = experiment_config("cifar", "tiny", "digits")
    with pytest.raises(ValueError, match="epochs"):
        dataclasses.replace(config, epochs="3")
    with pytest.raises(ValueError, match="lr"):
        dataclasses.replace(experiment_config("comet_images", "tiny", "digits"), lr=math.inf)
    with pytest.raises(ValueError, match="seeds"):
        dataclasses.replace(experiment_config("continual", "tiny", "digits"), seeds=(None,))
    with pytest.raises(ValueError, match="dataset"):
        experiment_config("cifar", "tiny", 3)


@pytest.mark.parametrize("call, name", [
    (lambda: __import__("experiments.papers.scaling_claims", fromlist=["x"]).matched_below([1.0, 2.0])(None), "x must be a real number"),
    (lambda: __import__("experiments.papers.subspace", fromlist=["x"]).needed_n_train([2], 10.0), "k must be an integer"),
    (lambda: __import__("experiments.analysis.fit_window", fromlist=["x"]).window_mask(
        pd.DataFrame({"buckets": [4.0], "spread_ratio": [0.1], "empty_fraction": [0.0],
                      "empty_share": [0.0]}), __import__("experiments.analysis.fit_window", fromlist=["x"])
        .WINDOW_RULE, None, 100), "k must be an integer"),
    (lambda: __import__("proofs_checks", fromlist=["x"]).final_verdict(None, 0.9), "raw must be a Verdict"),
    (lambda: __import__("experiments.kinds.fitting", fromlist=["x"]).adam_optimizer(
        [torch.nn.Parameter(torch.zeros(2))], 1e-3, (0.9, math.inf)), r"betas\[1\] must be"),
    (lambda: __import__("experiments.kinds.image_models", fromlist=["x"]).predict(
        __import__("experiments.kinds.image_models", fromlist=["x"]).TopKMLP(3, 4, 2, 2),
        torch.zeros(2, 3), 2.5), "batch_size must be an integer"),
    (lambda: __import__("experiments.analysis.scaling", fromlist=["x"]).fit_power_law(
        _golden(), "nope"), "x must name a column"),
    (lambda: __import__("experiments.papers.presets", fromlist=["x"]).subspace_widths(3, "nope"), "preset must be one of"),
    (lambda: __import__("experiments.kinds.continual_harness", fromlist=["x"]).unit_activity(
        __import__("experiments.kinds.image_models", fromlist=["x"]).TopKMLP(3, 4, 2, 2),
        torch.zeros(2, 4)), r"X: x must have shape \(B, 3\)"),
], ids=["matched_below", "needed_n_train", "window_mask", "final_verdict", "adam_betas",
        "predict", "fit_power_law", "subspace_widths", "unit_activity"])
def test_errors_name_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


@pytest.mark.parametrize("call", [
    lambda flag: __import__("experiments.kinds.image_models", fromlist=["x"]).four_layer_mlp(3, 4, 0.5, smaller=flag),
    lambda flag: __import__("experiments.runner.sweep", fromlist=["x"]).prepare_out([], _pathlib.Path("/nonexistent/x"), flag),
    lambda flag: __import__("proofs_checks", fromlist=["x"]).final_verdict("holds", 0.9, flag),
], ids=["four_layer_mlp", "prepare_out", "final_verdict"])
def test_more_flags_are_refused_not_read_by_truthiness(call):
    with pytest.raises(ValueError, match="must be True or False, got 'False'"):
        call("False")


def test_empty_activity_is_no_unit_active():
    from experiments.kinds.continual_harness import unit_activity
    from experiments.kinds.image_models import TopKMLP
    active = unit_activity(TopKMLP(3, 4, 2, 2), torch.zeros(0, 3))
    assert active.shape == (4,) and not active.any()  # was: RuntimeError from torch.stack


def test_check_params_refuse_a_bool_count():
    import dataclasses
    import proofs_checks as PC
    cls = PC.get_check("collisions")
    with pytest.raises(ValueError, match="params.trials must be an integer"):
        cls(dataclasses.replace(cls.Params(), trials=True))


def test_experiment_outputs_without_panels_or_claims(tmp_path):
    """A hand-written config without panels under a name without claims: files, no crash."""
    from experiments.pipeline.report import write_experiment_outputs
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
    from experiments.runner.sweep import run_sweep
    config = ExperimentConfig(name="mine", preset="tiny", target=TargetSpec(n_inputs=2, degree=1),
                              models=(ModelSpec("dense", width=4),), seeds=(0,), n_train=32,
                              n_eval=16)
    frame = run_sweep([config], tmp_path / "run", "cpu", progress=False)
    paths, claims = write_experiment_outputs("mine", [config], frame, tmp_path)
    assert claims == [] and (tmp_path / "claims.csv").exists()


def test_long_profile_flags_and_table_count_are_checked(tmp_path):
    """Found by the long fuzz profile: string flags read by truthiness in the sweep, the
    scale command's runner and the image experiments, and n_tables=True accepted."""
    from experiments.papers import real_data
    from experiments.pipeline.scale import run_experiment
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
    from experiments.runner.sweep import run_sweep

    config = ExperimentConfig(name="flags", preset="test", target=TargetSpec(n_inputs=2),
                              models=(ModelSpec("dense", width=4),), seeds=(0,), n_train=20,
                              n_eval=10)
    for flag in ("progress", "force"):
        with pytest.raises(ValueError, match=flag):
            run_sweep([config], tmp_path / "a", device="cpu", **{flag: "False"})
        with pytest.raises(ValueError, match=flag):
            run_experiment("flags", "test", tmp_path / "b", device="cpu", configs=[config],
                           **{flag: "False"})
        with pytest.raises(ValueError, match=flag):
            real_data.run_cifar("tiny", tmp_path / "c", device="cpu", **{flag: "False"})
    with pytest.raises(ValueError, match="n_tables"):
        ModelSpec("dense", width=4, n_tables=True)


# ---------------------------------------------------------------- found by the long profile (2)
def test_more_config_flags_and_seeds_are_checked():
    """String flags read by truthiness and seeds never checked on one path."""
    from experiments.papers.comet_studies import SimilarityConfig
    from experiments.kinds.continual_harness import class_split
    with pytest.raises(ValueError, match="bias must be True or False, got 'False'"):
        SimilarityConfig(bias="False")  # was accepted: COMET with biases, read as True
    with pytest.raises(ValueError, match="cache_features must be True or False"):
        SGDConfig(cache_features="False")
    assert class_split(2, 2, "naive", 0) == [(0, 1), (2, 3)]
    with pytest.raises(ValueError, match="seed must be an integer"):
        class_split(2, 2, "naive", 2.5)  # was ignored: only the "random" order read it


def test_claims_counts_and_sizes_are_checked():
    from experiments.analysis.claims import compare, comparison_diagnosis, comparison_verdict, paired_difference, seed_log_errors
    from experiments.papers.scaling_claims import matched_below
    frame = _golden()
    with pytest.raises(ValueError, match="n_train must be an integer >= 1, got 2.5"):
        compare("e", "t", frame, "comet", "dense", "width", n_train=2.5)  # was accepted
    stats = paired_difference(seed_log_errors(frame, "dsm", "activated_units"),
                              seed_log_errors(frame, "dense", "activated_units"), [(4, 16)])
    with pytest.raises(ValueError, match="n_train must be an integer"):
        comparison_diagnosis(frame, "dsm", "dense", "activated_units", stats, "exact", 2.5)
    assert comparison_verdict(stats, 0.1) == "underpowered"  # 2 seeds: MDE 0.49 > 0.1
    with pytest.raises(ValueError, match="sesoi must be a finite number"):
        comparison_verdict(stats, "0.1")
    with pytest.raises(ValueError, match="p_adjusted must be a number in"):
        comparison_verdict(stats, 0.1, p_adjusted=float("nan"))
    assert matched_below([1.0, 250.0])(2.0) == 1.0
    with pytest.raises(ValueError, match=r"sizes\[0\] must be a real number"):
        matched_below(["1.0", 250.0])  # was parsed as 1.0


def test_claims_never_turn_a_missing_value_into_a_verdict_or_text():
    from experiments.analysis.claims import lsh_description, t_interval
    from experiments.papers.scaling_claims import sizes_text
    from experiments.papers.baykal_tables import table1_rule
    nan = float("nan")
    assert table1_rule({"DSM": nan, "DSM 2": 0.5}, 1.0) == ("supported", "DSM 2")
    assert table1_rule({"DSM": 2.0, "DSM 2": nan}, 1.0) == ("not supported", "")
    assert table1_rule({"DSM": nan, "DSM 2": nan}, 1.0) == ("not tested", "")  # was "not supported"
    frame = _golden()
    with pytest.raises(ValueError, match="label 'random_hash' has no rows with a finite"):
        lsh_description(frame, "random_hash")  # was "min() arg is an empty sequence"
    frame.loc[frame.model_label == "lsh", "eval_nmse"] = nan
    # without eval_nmse on every row it reads eval_mse, and says so (it said "nMSE")
    assert " best MSE 0.00238 at 16 buckets" in lsh_description(frame, "lsh")
    frame.loc[frame.model_label == "lsh", "eval_mse"] = nan
    with pytest.raises(ValueError, match="label 'lsh' has no rows with a finite"):
        lsh_description(frame, "lsh")  # was "best nMSE nan"
    with pytest.raises(TypeError, match="name must be an experiment name"):
        sizes_text(None, [])  # was ""
    assert t_interval(np.array([1.0, 2.0, 3.0]))[0] == 2.0
    with pytest.raises(ValueError, match=r"values must be a 1-D array"):
        t_interval(np.array([[1.0], [2.0], [3.0]]))  # a column was flattened


def test_experiment_boundaries_name_the_callers_parameter(tmp_path):
    from experiments.pipeline.report import experiment_markdown
    from experiments.kinds.routers import build_router
    from experiments.analysis.scaling import window_text
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
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


def test_ewc_refuses_what_would_make_its_penalty_nan():
    from experiments.kinds.continual_harness import EWC
    from experiments.kinds.image_models import TopKMLP
    ewc = EWC(TopKMLP(3, 4, 2, 2), 1.0, 3)
    y = torch.zeros(4, dtype=torch.int64)
    ewc.consolidate(torch.ones(4, 3), y, 0)
    assert math.isfinite(float(ewc.penalty().detach()))
    with pytest.raises(ValueError, match="Fisher information of these examples overflows"):
        ewc.consolidate(torch.ones(4, 3) * 1e30, y, 0)  # was a NaN penalty
    with pytest.raises(ValueError, match="same positive number of rows"):
        ewc.consolidate(torch.ones(0, 3), y[:0], 0)  # was 0/0: a NaN penalty
    with pytest.raises(ValueError, match="seed must be an integer"):
        ewc.consolidate(torch.ones(4, 3), y, 2.5)  # was torch's RuntimeError
    one = EWC(TopKMLP(3, 4, 2, 2), 1.0, 1)  # one sampled example: row 0 with seed 0
    X = torch.ones(4, 3)
    X[1:] = float("nan")
    with pytest.raises(ValueError, match="X must be finite; it has 9 NaN"):
        one.consolidate(X, y, 0)  # was accepted: the NaN rows were never sampled
    assert math.isfinite(float(ewc.penalty().detach()))  # a refused task changed nothing


def test_target_spec_checks_every_field_whatever_the_family():
    from experiments.runner.specs import TargetSpec
    assert TargetSpec("hypercube", 2, degree=0).build()[0].n_inputs == 2
    with pytest.raises(ValueError, match="degree must be an integer >= 0, got 2.5"):
        TargetSpec("hypercube", 2, degree=2.5)  # was recorded in the config, never read
    with pytest.raises(ValueError, match=r"subspace_k must be an integer in \[1, 2\], got 3"):
        TargetSpec("polynomial", 2, subspace_k=3)  # was UniformSubspace's "k must be ..."
    with pytest.raises(ValueError, match=r"hidden\[1\] must be an integer >= 1"):
        TargetSpec("mlp", 2, hidden=(4, 0))
    with pytest.raises(ValueError, match="seed must be an integer"):
        TargetSpec("hypercube", 2, seed=-1)


def test_check_runs_refuse_string_power_flags_and_bad_seed_lists(tmp_path):
    import proofs_checks as PC
    with pytest.raises(ValueError, match="power must be True or False, got 'False'"):
        PC.run_checks("tiny", None, only=["eq1_flops"], progress=False, power="False")
    with pytest.raises(ValueError, match="power must be True or False"):
        PC.get_check("eq1_flops").preset(PC.cli.PARAMS_OF_PRESET["tiny"]).run(0, power="False")
    with pytest.raises(ValueError, match="progress must be True or False"):
        PC.run_checks("tiny", None, only=["eq1_flops"], progress="False")
    planted = PC.get_check("collisions").preset(
        PC.cli.PARAMS_OF_PRESET["tiny"]).planted_violations()[0]
    for bad, word in ((None, "seeds must be an iterable"), (3, "seeds must be an iterable"),
                      ([0, 2.5], r"seeds\[1\] must be an integer")):
        with pytest.raises(ValueError, match=word):
            PC.measure_power(planted, bad)  # None and 3 were TypeError: not iterable
