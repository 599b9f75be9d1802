"""lipschitz.CustomTarget: a user's numpy or torch function with a stated, probed bound."""

import json

import numpy as np
import pytest
import torch

from lipschitz import CustomTarget, UniformCube, estimate_lipschitz, make_dataset
from lipschitz.custom_target import PROBE_RTOL, probe_points

W = np.array([0.3, -0.4, 1.2])


def linear(X):
    """x ↦ w·x: Lipschitz constant exactly ‖w‖₂ (an importable function for from_config)."""
    return X @ W


def sines(X):
    return np.sin(2.0 * X).sum(axis=1)


def test_exact_bound_of_a_linear_function_is_accepted():
    f = CustomTarget(linear, n_inputs=3, lipschitz_bound=float(np.linalg.norm(W)))
    assert f.backend == "numpy"
    # the difference-quotient gradient of a linear map is w itself, up to rounding
    assert f.probe.value == pytest.approx(np.linalg.norm(W), rel=1e-8)
    X = UniformCube(3).sample(5, seed=1)
    np.testing.assert_allclose(f(X), X @ W, rtol=0, atol=1e-15)


def test_bound_moved_across_the_estimate():
    measured = CustomTarget(sines, 3, lipschitz_bound=100.0).probe.value
    assert measured == pytest.approx(2 * np.sqrt(3), rel=0.02)  # sup ‖∇f‖ = 2√3 at x = 0
    CustomTarget(sines, 3, lipschitz_bound=measured * (1 + 0.5 * PROBE_RTOL))  # just above
    with pytest.raises(ValueError) as error:
        CustomTarget(sines, 3, lipschitz_bound=measured * (1 - 10 * PROBE_RTOL))  # just below
    message = str(error.value)
    assert "lipschitz_bound" in message and f"{measured:.6g}" in message
    with pytest.raises(ValueError, match="below the Lipschitz constant"):
        CustomTarget(sines, 3, lipschitz_bound=2.0)  # the natural mistake: forgot the factor 2


def test_probe_is_seeded_and_includes_the_corners():
    X = probe_points(3, 10, seed=4)
    assert X.shape == (10 + 8, 3) and np.array_equal(X, probe_points(3, 10, seed=4))
    assert {tuple(r) for r in X[10:]} == {(a, b, c) for a in (-1.0, 1.0) for b in (-1.0, 1.0)
                                          for c in (-1.0, 1.0)}
    assert probe_points(11, 10, seed=0).shape == (10, 11)  # no 2^11 corners
    # the steepest place of x ↦ x0² on the cube is a face: the corners find slope 2
    f = CustomTarget(lambda X: X[:, 0] ** 2, 3, lipschitz_bound=2.0, n_probe=2)
    assert f.probe.value == pytest.approx(2.0, rel=1e-4)
    with pytest.raises(ValueError):
        CustomTarget(lambda X: X[:, 0] ** 2, 3, lipschitz_bound=1.99, n_probe=2)


def test_torch_callable_gets_exact_gradients_on_its_dtype():
    f = CustomTarget(lambda X: torch.sin(2.0 * X).sum(dim=1), 3, lipschitz_bound=2 * 3 ** 0.5)
    assert f.backend == "torch"
    X = probe_points(3, 2048, seed=0)
    expected = np.linalg.norm(2 * np.cos(2 * X), axis=1).max()
    assert f.probe.gradient == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(f(X), sines(X), rtol=1e-14)
    Xt = torch.tensor(X[:7], dtype=torch.float32)
    assert f.torch(Xt).dtype == torch.float32 and f.torch(Xt).shape == (7,)
    X, y = make_dataset(f, UniformCube(3), n_samples=50, seed=2)
    np.testing.assert_allclose(y, sines(X), rtol=1e-14)


def test_numpy_function_in_autograd_matches_its_gradient():
    f = CustomTarget(sines, 3, lipschitz_bound=2 * 3 ** 0.5)
    X = torch.tensor(UniformCube(3).sample(20, seed=3) * 0.9, requires_grad=True)
    (grad,) = torch.autograd.grad(f.torch(X).sum(), X)
    np.testing.assert_allclose(grad.numpy(), 2 * np.cos(2 * X.detach().numpy()), atol=1e-6)


def test_kink_is_not_overstated():
    # ‖x‖₁ has ℓ2 constant √n, reached everywhere off the axes planes: the estimate must not
    # exceed it (its gradient is a true difference quotient), so the exact bound passes
    f = CustomTarget(lambda X: np.abs(X).sum(axis=1), 8, lipschitz_bound=np.sqrt(8))
    assert f.probe.value <= np.sqrt(8) * (1 + PROBE_RTOL)
    assert estimate_lipschitz(f, UniformCube(8).sample(100, seed=0)).value > 2.5


@pytest.mark.parametrize("fn, match", [
    (lambda X: X[:, :1], r"must return shape \(\d+,\) .* got \(\d+, 1\)"),
    (lambda X: X.sum(), r"must return shape \(\d+,\) .* got \(\)"),
    (lambda X: X.sum(axis=1)[:-1], "shape"),
    (lambda X: np.where(X[:, 0] > 0, np.inf, 0.0), "NaN or infinite"),
    (lambda X: X.sum(axis=1).astype(complex), "real values"),
    (lambda X: torch.ones(X.shape[0], 3, requires_grad=True).sum(1, keepdim=True), "shape"),
])
def test_bad_outputs_are_refused(fn, match):
    with pytest.raises(ValueError, match=match):
        CustomTarget(fn, 2, lipschitz_bound=10.0)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="fn must be callable"):
        CustomTarget(3.0, 2, 1.0)
    with pytest.raises(ValueError, match="n_inputs"):
        CustomTarget(linear, 0, 1.0)
    with pytest.raises(ValueError, match="lipschitz_bound"):
        CustomTarget(linear, 3, -1.0)
    with pytest.raises(ValueError, match="backend"):
        CustomTarget(linear, 3, 2.0, backend="jax")
    with pytest.raises(ValueError, match="n_probe"):
        CustomTarget(linear, 3, 2.0, n_probe=1)
    with pytest.raises(ValueError, match="fn failed"):
        CustomTarget(lambda X: X.no_such_method(), 3, 2.0)
    f = CustomTarget(linear, 3, 2.0)
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        f(np.zeros((4, 2)))


def test_config_round_trip():
    f = CustomTarget(linear, 3, 2.0, name="linear map", seed=5)
    config = json.loads(json.dumps(f.config()))
    assert config["fn"].endswith(":linear") and config["family"] == "CustomTarget"
    g = CustomTarget.from_config(config)
    assert g.name == "linear map" and g.lipschitz_bound == 2.0 and g.probe == f.probe
    with pytest.raises(ValueError, match="cannot be imported"):
        CustomTarget.from_config(CustomTarget(lambda X: X[:, 0], 3, 1.0).config())


def test_target_from_config_rebuilds_a_custom_target():
    from lipschitz import target_from_config

    f = CustomTarget(linear, 3, 2.0, seed=5)
    g = target_from_config(json.loads(json.dumps(f.config())))
    X = np.random.default_rng(0).uniform(-1, 1, (16, 3))
    assert isinstance(g, CustomTarget) and np.array_equal(g(X), f(X))
    with pytest.raises(ValueError, match="'CustomTarget'"):
        target_from_config({"family": "Custom"})


def test_custom_target_with_few_probe_points_is_accepted():
    """n_probe = 2 on one input: 4 probe points (2 + the 2 corners). The probe asked for 4
    neighbours and failed with "n_neighbors must be an integer in [1, 3]", a parameter the
    user never gave."""
    f = CustomTarget(lambda X: 0.5 * X.sum(1), 1, 1.0, n_probe=2)
    assert f.probe.value == pytest.approx(0.5)
    with pytest.raises(ValueError, match="lipschitz_bound"):  # the probe still decides
        CustomTarget(lambda X: 3.0 * X.sum(1), 1, 1.0, n_probe=2)
