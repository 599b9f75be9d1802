"""Data sets: generation, determinism, noise, and the .npz round trip with its config."""

import numpy as np
import pytest

from lipschitz import (
    RandomHypercubeFunction,
    RandomPolynomial,
    UniformCube,
    UniformSubspace,
    dataset_config,
    load_dataset,
    make_dataset,
    regenerate_dataset,
    sample_inputs,
    save_dataset,
)


def test_dataset_is_target_on_distribution_and_seeded():
    f, dist = RandomPolynomial(6, 3, seed=2), UniformSubspace(6, 2, seed=1)
    X, y = make_dataset(f, dist, 500, seed=9)
    assert X.shape == (500, 6) and y.shape == (500,)
    np.testing.assert_array_equal(y, f(X))
    assert np.abs(X - X @ dist.basis @ dist.basis.T).max() < 1e-9
    X2, y2 = make_dataset(f, dist, 500, seed=9)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _ = make_dataset(f, dist, 500, seed=10)
    assert not np.array_equal(X, X3)


@pytest.mark.parametrize("noise_std", [0.0, 0.3])
def test_sample_inputs_are_make_datasets_inputs_bit_for_bit(noise_std):
    f, dist = RandomPolynomial(6, 3, seed=2), UniformSubspace(6, 2, seed=1)
    X, y = make_dataset(f, dist, 300, noise_std=noise_std, seed=9)
    np.testing.assert_array_equal(sample_inputs(dist, 300, seed=9), X)
    assert not np.array_equal(sample_inputs(dist, 300, seed=10), X)
    # the noise stream is the second child of the seed, as before sample_inputs existed
    ss = np.random.SeedSequence(9).spawn(2)
    np.testing.assert_array_equal(
        X, dist.sample(300, seed=int(ss[0].generate_state(1)[0])))
    expected = f(X) + (np.random.default_rng(ss[1]).normal(0.0, noise_std, size=300)
                       if noise_std else 0.0)
    np.testing.assert_array_equal(y, expected)
    with pytest.raises(ValueError, match="n_samples"):
        sample_inputs(dist, 0)
    with pytest.raises(ValueError, match="distribution"):
        sample_inputs(object(), 3)


def test_noise_has_requested_std():
    f = RandomHypercubeFunction(4, seed=0)
    X, y = make_dataset(f, UniformCube(4), 20_000, noise_std=0.5, seed=3)
    residual = y - f(X)
    assert residual.std() == pytest.approx(0.5, rel=0.03)
    assert abs(residual.mean()) < 0.02


def test_save_load_round_trip_regenerates_bit_for_bit(tmp_path):
    f, dist = RandomPolynomial(5, 2, seed=4), UniformSubspace(5, 3, seed=2)
    X, y = make_dataset(f, dist, 300, noise_std=0.1, seed=7)
    config = dataset_config(f, dist, 300, noise_std=0.1, seed=7)
    save_dataset(tmp_path / "data.npz", X, y, config)
    X2, y2, config2 = load_dataset(tmp_path / "data.npz")
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)
    assert config2 == config
    X3, y3 = regenerate_dataset(config2)
    np.testing.assert_array_equal(X3, X)
    np.testing.assert_array_equal(y3, y)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"noise_std": -0.1}, "noise_std"),
        ({"n_samples": 0}, "n_samples"),
        ({"seed": -2}, "seed"),
        ({"noise_std": float("nan")}, "noise_std"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    args = {"target": RandomPolynomial(3, 2), "distribution": UniformCube(3), "n_samples": 10}
    with pytest.raises(ValueError, match=match):
        make_dataset(**{**args, **kwargs})


def test_dimension_mismatch_raises():
    with pytest.raises(ValueError, match="n_inputs"):
        make_dataset(RandomPolynomial(3, 2), UniformCube(4), 10)


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


def test_save_dataset_refuses_what_load_dataset_cannot_read(tmp_path):
    with pytest.raises(ValueError, match="X must be a real-valued array"):
        save_dataset(tmp_path / "x.npz", np.array([[1, "a"]], dtype=object), np.array([1.0]), {})
    assert not (tmp_path / "x.npz").exists()
    with pytest.raises(ValueError, match="config must be JSON"):
        save_dataset(tmp_path / "x.npz", np.ones((1, 2)), np.array([1.0]), {"a": object()})
    save_dataset(tmp_path / "x.npz", np.ones((1, 2)), np.array([1.0]), {"a": 1})
    assert load_dataset(tmp_path / "x.npz")[2] == {"a": 1}
