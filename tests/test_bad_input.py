"""Bad input to the public API as a hostile user would give it: every case gets a ValueError or
TypeError naming the parameter (with its value and allowed range where it has one), never a
silent wrong answer, a hang, a NaN/inf from finite input, or an error from deep inside numpy
or torch.

Each limit the code enforces is tested on both sides (the largest accepted value works, the
next one is refused), through the module constant that states it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import routing.models as M
import lipschitz as L
import routing as R
import routing.layers as RL
import routing.sdm as SDM
from routing import LSHTable

pytestmark = pytest.mark.usefixtures("one_thread")

RNG = np.random.default_rng(0)
X2 = RNG.uniform(-1, 1, (12, 2))
Y2 = X2.sum(axis=1)
TARGET = L.RandomPolynomial(2, 2, seed=1)


def _named(error, *names):
    """The error's message names one of ``names``."""
    return any(name in str(error.value) for name in names)


# ---------------------------------------------------------------- silent wrong answers
class _FloatIdHasher:
    """A hasher whose ids are floats: 0.1 for x0 < 0, 0.9 otherwise (two buckets)."""

    n_tables = 1
    dim = 2

    def bucket_ids(self, X):
        return np.where(np.asarray(X)[:, :1] < 0, 0.1, 0.9)


class _IntIdHasher(_FloatIdHasher):
    def bucket_ids(self, X):
        return np.where(np.asarray(X)[:, :1] < 0, 1, 9)


def test_lsh_table_refuses_float_bucket_ids():
    # truncated to int64, 0.1 and 0.9 would both be bucket 0: one bucket instead of two
    with pytest.raises(ValueError) as error:
        LSHTable(_FloatIdHasher()).fit(X2, Y2)
    assert _named(error, "bucket_ids") and "float64" in str(error.value)


def test_lsh_table_keeps_integer_ids_apart():
    table = LSHTable(_IntIdHasher()).fit(X2, Y2)
    assert len(table.buckets_) == 2
    left = X2[:, 0] < 0
    np.testing.assert_allclose(table.predict(X2), np.where(left, Y2[left].mean(), Y2[~left].mean()))


@pytest.mark.parametrize("a", [1 + 1j, complex(0.5, 0.0), float("nan"), float("inf"), -0.5, "0.5",
                               None, True])
def test_coordinate_extent_refuses_non_real_or_non_finite(a):
    manifold = L.CurvedManifold(4, 1, 0.5)
    with pytest.raises((ValueError, TypeError)) as error:
        manifold.coordinate_extent(a)
    assert _named(error, "a ")


def test_coordinate_extent_of_a_huge_half_width_is_finite_or_refused():
    manifold = L.CurvedManifold(4, 4, 0.0)  # flat: the extent is a · max_j Σ_i |U_ji|
    row_l1 = np.abs(manifold.tangent_frame).sum(axis=1).max()
    assert row_l1 > 1.01  # unit rows of a random rotation: their L1 norm exceeds 1
    assert manifold.coordinate_extent(1e300) == pytest.approx(1e300 * row_l1)
    with pytest.raises(ValueError, match="a="):
        manifold.coordinate_extent(1.79e308)


# ---------------------------------------------------------------- hangs
def test_monte_carlo_intersection_refuses_trial_counts_beyond_the_stated_limit():
    from routing.sdm import _empirical

    with pytest.raises(ValueError) as error:
        SDM.monte_carlo_intersection(64, 10, 3, 10**13)
    assert "r" in str(error.value) and f"{_empirical.MAX_SAMPLED_WORDS:,}" in str(error.value)


def test_monte_carlo_limit_is_on_sampled_words(monkeypatch):
    from routing.sdm import _empirical

    monkeypatch.setattr(_empirical, "MAX_SAMPLED_WORDS", 300)
    assert SDM.monte_carlo_intersection(64, 10, 3, 300).r == 300  # one word per neuron
    with pytest.raises(ValueError, match="r="):
        SDM.monte_carlo_intersection(64, 10, 3, 301)
    assert SDM.monte_carlo_intersection(128, 10, 3, 150).r == 150  # two words per neuron
    with pytest.raises(ValueError, match="r="):
        SDM.monte_carlo_intersection(128, 10, 3, 151)


# ---------------------------------------------------------------- non-finite results
def test_make_dataset_refuses_noise_that_overflows():
    from lipschitz.dataset import MAX_NOISE_STD

    X, y = L.make_dataset(TARGET, L.UniformCube(2), 50, noise_std=MAX_NOISE_STD, seed=0)
    assert np.isfinite(y).all() and np.isfinite(np.mean(y**2))
    for call in (L.make_dataset, L.dataset_config):
        with pytest.raises(ValueError) as error:
            call(TARGET, L.UniformCube(2), 50, noise_std=np.nextafter(MAX_NOISE_STD, np.inf))
        assert _named(error, "noise_std")
        with pytest.raises(ValueError, match="noise_std"):
            call(TARGET, L.UniformCube(2), 50, noise_std=1e308)


def test_scaled_target_refuses_an_infinite_bound():
    from lipschitz.transforms import MAX_LIPSCHITZ_BOUND

    largest = MAX_LIPSCHITZ_BOUND / TARGET.lipschitz_bound
    scaled = L.ScaledTarget(TARGET, largest)
    assert math.isfinite(scaled.lipschitz_bound) and np.isfinite(scaled(X2) ** 2).all()
    with pytest.raises(ValueError, match="factor"):
        L.ScaledTarget(TARGET, largest * (1 + 1e-9))
    with pytest.raises(ValueError, match="factor"):
        L.ScaledTarget(TARGET, 1e308)
    with pytest.raises(ValueError, match="lipschitz"):
        L.rescale(TARGET, 1e308)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_embed_refuses_non_finite_parameters(value):
    manifold = L.CurvedManifold(4, 1, 0.5)
    with pytest.raises(ValueError, match="Z"):
        manifold.embed(np.array([[value]]))


def test_embed_of_a_huge_parameter_stays_on_the_circle():
    # a coordinate curve is a circle of radius 1/κ around v/κ, however far z goes along it
    kappa = 0.5
    manifold = L.CurvedManifold(4, 1, kappa)
    Z = np.array([[1e300], [-3e200], [1e20], [0.3]])
    X = manifold.embed(Z)
    assert np.isfinite(X).all()
    radius = np.linalg.norm(X - manifold.normal_frame[:, 0] / kappa, axis=1)
    np.testing.assert_allclose(radius, 1 / kappa, rtol=1e-12)


def test_embed_refuses_a_result_that_overflows():
    manifold = L.CurvedManifold(4, 4, 0.0)
    signs = np.sign(manifold.tangent_frame[0])  # all terms of coordinate 0 add up
    assert np.isfinite(manifold.embed(1e300 * signs[None])).all()
    with pytest.raises(ValueError, match="Z"):
        manifold.embed(1.79e308 * signs[None])


@pytest.mark.parametrize("value", [np.nan, np.inf, -1e309])
@pytest.mark.parametrize("name, model", [
    ("dense", lambda: M.Dense(2, 4)), ("dsm", lambda: M.DSM(2, 4, 2)),
    ("random_hash", lambda: M.RandomHashModel(2, 4, 2)), ("lsh", lambda: M.LSHModel(2, 2)),
])
def test_set_coefficients_refuses_non_finite_coefficients(name, model, value):
    model = model()
    before = model.coefficients().detach().clone()
    theta = np.ones(model.n_coef)
    theta[1] = value
    with pytest.raises(ValueError, match="theta"):
        model.set_coefficients(theta)
    assert torch.equal(model.coefficients(), before)  # nothing written
    if model.output_bias is not None:
        with pytest.raises(ValueError, match="bias"):
            model.set_coefficients(np.ones(model.n_coef), value)
    else:
        with pytest.raises(ValueError, match="bias"):
            model.set_coefficients(np.ones(model.n_coef), 1.0)  # would be dropped silently


def test_set_coefficients_still_takes_finite_values_and_tensors():
    model = M.Dense(2, 4)
    model.set_coefficients(torch.arange(4.0), torch.tensor(0.5))
    assert torch.equal(model.coefficients(), torch.arange(4.0))
    assert float(model.output_bias) == 0.5


# ---------------------------------------------------------------- unclear errors
def test_check_allocation_names_the_parameter_and_the_memory():
    from routing.validation import check_allocation

    check_allocation(10, 8, "n", 10)
    with pytest.raises(ValueError) as error:
        check_allocation(2**40, 8, "n_samples", 2**40)
    text = str(error.value)
    assert "n_samples=1099511627776" in text and "8 TiB" in text


@pytest.mark.parametrize("call, name", [
    (lambda: L.UniformCube(2).sample(10**12), "n"),
    (lambda: L.UniformCube(10**12).sample(2), "dim"),
    (lambda: L.make_dataset(TARGET, L.UniformCube(2), 10**12), "n_samples"),
    (lambda: M.Dense(2, 10**12), "width"),
    (lambda: M.Dense(2**64, 2), "dim"),
    (lambda: M.DSM(2**64, 4, 2), "dim"),
    (lambda: R.HyperplaneLSH(10**12, 8), "dim"),
    (lambda: R.AffineHyperplaneLSH(2, 8, n_tables=10**12), "n_tables"),
    (lambda: R.EuclideanLSH(2, 1, 0.5, n_tables=10**10), "n_tables"),
    (lambda: R.CrossPolytopeLSH(2**40, 1), "dim"),
])
def test_sizes_beyond_memory_are_refused_by_name(call, name):
    with pytest.raises(ValueError) as error:
        call()
    assert _named(error, name) and "B of memory" in str(error.value)


def test_polynomial_feature_counts_stop_at_the_cap():
    from routing.lsh_table import MAX_POLY_FEATURES, n_polynomial_features

    assert [n_polynomial_features(d, deg) for d, deg in ((2, 2), (8, 0), (1, 5), (8, 3))] == [
        math.comb(d + deg, deg) for d, deg in ((2, 2), (8, 0), (1, 5), (8, 3))]
    # C(10^9 + 10^9, 10^9) has 6·10^8 digits: math.comb would run for hours
    assert n_polynomial_features(10**9, 10**9) == MAX_POLY_FEATURES + 1
    with pytest.raises(ValueError, match="degree=1000000000"):
        M.LSHModel(10**9, 3, degree=10**9)


@pytest.mark.parametrize("call, name", [
    # a layer's parameters beyond memory (torch: "Overflow when unpacking long long", or an
    # allocation of hundreds of GiB)
    (lambda: RL.DenseMLPConfig(3, 2**64), "width"),
    (lambda: RL.SigmaMoEConfig(3, n_experts=4, expert_size=10**10, k=1), "expert_size"),
    (lambda: RL.TopKMoEConfig(10**10, n_experts=4, expert_size=2), "d_in"),
    (lambda: RL.SMEARConfig(3, n_experts=2**64, expert_size=2), "n_experts"),
    (lambda: RL.SDMLPConfig(3, n_neurons=10**10, k_target=2), "n_neurons"),
    (lambda: RL.PKMConfig(4, n_keys=10**6, k=2), "n_keys"),
    (lambda: RL.COMETConfig(3, (8, 10**10)), "widths[1]"),
    # targets and distributions beyond memory
    (lambda: L.RandomMLP(2, (10**10,)), "hidden[0]"),
    (lambda: L.RandomMLP(2**64, (4,)), "n_inputs"),
    (lambda: L.CustomTarget(lambda X: X[:, 0], 2, 1.0, n_probe=10**10), "n_probe"),
    (lambda: L.UniformSubspace(4, 2).sample(10**12), "n"),
    (lambda: L.CurvedManifold(4, 1, 0.5).sample(10**12), "n"),
    (lambda: L.CurvedManifold(10**10, 1, 0.5), "dim"),
    # the SDM kernels: tables of n + 2 numbers, O(n) steps per distance, 2^n for a radius
    (lambda: SDM.circle_intersection(2**64, 3, 2), "n must be"),
    (lambda: SDM.space_fraction(10**10, 3), "n must be"),
    (lambda: SDM.fit_softmax_beta(10**10, 5), "n must be"),
    (lambda: SDM.fit_softmax_beta(10**6, 4 * 10**5), "d=400000"),
    (lambda: SDM.circle_intersection(10**6, 4 * 10**5, 10**5, exact=True), "exact"),
    (lambda: SDM.monte_carlo_intersection(2**64, 3, 2, 1), "n"),
    (lambda: R.CrossPolytopeLSH(2**64, 1), "dim="),
    (lambda: R.UniformHash(4, dim=2**64), "dim"),
])
def test_sizes_beyond_memory_or_time_are_refused_by_name(call, name):
    with pytest.raises(ValueError) as error:
        call()
    assert name in str(error.value)


def test_snr_optimal_radius_refuses_an_address_length_beyond_its_kernel():
    from routing.sdm._intersection import MAX_FLOAT_N

    assert SDM.snr_optimal_radius(10**6, 10**6, 100) < 5 * 10**5
    with pytest.raises(ValueError, match="n must be an integer in"):
        SDM.snr_optimal_radius(MAX_FLOAT_N + 1, 10**6, 100)  # formed 2^n first: a hang
    with pytest.raises(ValueError, match="n must be an integer in"):
        SDM.circle_intersection(MAX_FLOAT_N + 1, 3, 0)  # exact=True keeps small radii cheap
    assert SDM.circle_intersection(MAX_FLOAT_N + 1, 3, 0, exact=True) == sum(
        math.comb(MAX_FLOAT_N + 1, k) for k in range(4))


def test_circle_intersection_work_limits_move_across_their_thresholds(monkeypatch):
    from routing.sdm import _intersection

    # float: len(d_v)·(max d_v + d + 1) = 2·(1 + 10 + 1) = 24 steps at d = 10
    monkeypatch.setattr(_intersection, "MAX_FLOAT_WORK", 24)
    assert np.isfinite(SDM.circle_intersection(50, 10, [0, 1], log=True)).all()
    with pytest.raises(ValueError, match="d=11"):
        SDM.circle_intersection(50, 11, [0, 1], log=True)
    # exact: steps × min(n, width · bit_length(n)) = 2·7 · min(20, 7·5) = 280 at n = 20
    monkeypatch.setattr(_intersection, "MAX_EXACT_WORK", 280)
    assert SDM.circle_intersection(20, 5, [0, 1], exact=True)[0] > 0
    with pytest.raises(ValueError, match="exact"):
        SDM.circle_intersection(21, 5, [0, 1], exact=True)
    # a small radius stays cheap however long the address (a bound in n alone refused this)
    monkeypatch.setattr(_intersection, "MAX_EXACT_WORK", 10**10)
    assert SDM.circle_intersection(2**64, 3, 2, exact=True) == sum(
        math.comb(2**64 - 2, z) * math.comb(2, c) for z in range(3) for c in range(3)
        if c + z <= 3 and 2 - c + z <= 3)


@pytest.mark.parametrize("call, name", [
    (lambda: L.RandomMLP(2, 4), "hidden"),  # an int, not a tuple of widths
    (lambda: L.RandomMLP(2, None), "hidden"),
    (lambda: L.target_from_config(None), "config"),
    (lambda: L.distribution_from_config("UniformCube"), "config"),
    (lambda: L.regenerate_dataset(3), "config"),
    (lambda: L.regenerate_dataset({"target": TARGET.config()}), "distribution"),
    (lambda: L.load_dataset(None), "path"),
    (lambda: L.compose_linear(TARGET, np.full((2, 3), 0.2), np.full(2, 0.1) + 1j), "offset"),
    (lambda: L.compose_linear(TARGET, np.full((2, 3), 0.2), np.array(["0.1", "0.1"])), "offset"),
    (lambda: L.RandomPolynomial(2, 2, lipschitz=1e308), "lipschitz"),
    (lambda: L.RandomMLP(2, (4,), lipschitz=1e308), "lipschitz"),
    (lambda: RL.COMET(RL.COMETConfig(3, (8,))).flops_per_example("False"), "dense"),
    (lambda: RL.DenseMLP(RL.DenseMLPConfig(3, 4)).record_usage(
        indices=torch.zeros(2, 1, dtype=torch.long), offset=2.5), "offset"),
    (lambda: SDM.monte_carlo_intersection(20, 5, 3, 100).contains(float("nan")), "fraction"),
    (lambda: SDM.monte_carlo_intersection(20, 5, 3, 100).contains(None), "fraction"),
    (lambda: M.Dense(2, 4).shift_output(float("nan")), "c"),
    (lambda: M.LSHModel(2, 2).shift_output(float("inf")), "c"),
    (lambda: M.Dense(2, 4).set_coefficients(np.ones(4), 1 + 1j), "bias"),
    (lambda: M.Dense(2, 4).set_coefficients(np.ones(4) + 1j), "theta"),
    (lambda: M.Dense(2, 4).set_coefficients(None), "theta"),
    (lambda: M.Dense(2, 4).set_coefficients(np.full(4, 1e300)), "theta"),  # inf in float32
])
def test_bad_values_are_refused_by_name(call, name):
    with pytest.raises((ValueError, TypeError)) as error:
        call()
    assert name in str(error.value)


@pytest.mark.parametrize("layer", [RL.COMET, RL.SigmaMoE, RL.TopKMoE, RL.PKM, RL.SMEAR, RL.SDMLP,
                                   RL.DenseMLP])
@pytest.mark.parametrize("config", [None, 3, {"d_in": 3}])
def test_layers_refuse_a_config_of_another_type(layer, config):
    with pytest.raises(TypeError) as error:
        layer(config)
    assert _named(error, "config") and layer.__name__ + "Config" in str(error.value)


def test_layers_refuse_another_layers_config():
    with pytest.raises(TypeError, match="config"):
        RL.SDMLP(RL.DenseMLPConfig(3, 4))


@pytest.mark.parametrize("call", [
    lambda t: L.compose_linear(t, np.eye(2)), lambda t: L.LinearlyComposedTarget(t, np.eye(2)),
    lambda t: L.ScaledTarget(t, 2.0), lambda t: L.rescale(t, 2.0),
])
@pytest.mark.parametrize("target", [3, None, "f", lambda x: x[:, 0]])
def test_target_transforms_refuse_a_non_target(call, target):
    with pytest.raises(TypeError) as error:
        call(target)
    assert _named(error, "target")


def test_estimate_lipschitz_refuses_a_non_target():
    with pytest.raises(TypeError, match="f must be"):
        L.estimate_lipschitz(3, X2)


def test_dead_fraction_before_any_example_says_what_to_do():
    layer = RL.DenseMLP(RL.DenseMLPConfig(3, 4))
    with pytest.raises(ValueError, match="forward pass"):
        layer.dead_fraction()
    layer.track_usage = False
    layer(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="track_usage"):
        layer.dead_fraction()
    layer.track_usage = True
    layer(torch.zeros(2, 3))
    assert 0.0 <= layer.dead_fraction() <= 1.0


def test_run_checks_refuses_a_file_as_out(tmp_path):
    from proofs_checks.run import run_checks

    a_file = tmp_path / "results.txt"
    a_file.write_text("x")
    for out in (a_file, a_file / "sub"):
        with pytest.raises(ValueError) as error:
            run_checks("quick", out, only=["nope"], progress=False)
        assert _named(error, "out") and "folder" in str(error.value)
    with pytest.raises(TypeError, match="out"):
        run_checks("quick", 3, progress=False)


@pytest.mark.parametrize("layer", [
    lambda: RL.DenseMLP(RL.DenseMLPConfig(3, 4)), lambda: RL.COMET(RL.COMETConfig(3, (8,))),
    lambda: RL.SMEAR(RL.SMEARConfig(3, n_experts=2, expert_size=2)),
    lambda: RL.SDMLP(RL.SDMLPConfig(3, n_neurons=8, k_target=2)),
])
@pytest.mark.parametrize("epoch", [1.5, -1, True, None, "2"])
def test_set_training_progress_refuses_bad_epochs(layer, epoch):
    layer = layer()
    with pytest.raises(ValueError, match="epoch"):
        layer.set_training_progress(epoch)
    layer.set_training_progress(0)
    layer.set_training_progress(3)
