"""The shared argument checks of ``routing.validation``: each bad input gets a ValueError that
names the parameter; good input comes back converted."""

import numpy as np
import pytest
import torch

from routing.validation import check_bool, check_choice, check_tensor
from routing.validation import check_seed


def test_check_tensor_converts_and_places():
    out = check_tensor(np.arange(6).reshape(3, 2), "X", (None, 2), dtype=torch.float32)
    assert out.dtype == torch.float32 and out.shape == (3, 2)
    assert torch.equal(out, torch.tensor([[0, 1], [2, 3], [4, 5]], dtype=torch.float32))
    t = torch.ones(4, dtype=torch.float64)
    assert check_tensor(t, "y", (4,)).dtype == torch.float64  # dtype None: unchanged


@pytest.mark.parametrize("a, shape, message", [
    (np.ones((3, 2)), (None, 3), r"X must have shape \(N, 3\), got shape \(3, 2\)"),
    (np.ones(3), (None, 3), r"X must have shape \(N, 3\), got shape \(3,\)"),
    (np.ones(4), (5,), r"X must have shape \(5,\), got shape \(4,\)"),
    (np.array([[1.0, np.nan]]), (None, 2), "X must be finite; it has 1 NaN"),
    (torch.tensor([[np.inf, -np.inf]]), (None, 2), "X must be finite; it has 2 NaN"),
    (np.array([["a", "b"]]), (None, 2), "X must be a real-valued array"),
    (np.ones((1, 2), complex), (None, 2), "X must be a real-valued array"),
    (torch.ones(1, 2, dtype=torch.complex64), (None, 2), "X must be real-valued"),
])
def test_check_tensor_rejects_with_the_parameter_name(a, shape, message):
    with pytest.raises(ValueError, match=message):
        check_tensor(a, "X", shape)


def test_check_tensor_finite_entries_whose_sum_overflows_pass():
    """The quick check sums the entries; a sum that overflows to inf is checked in full."""
    big = np.full((4, 2), np.finfo(np.float32).max / 2, np.float32)
    out = check_tensor(big, "X", (None, 2))
    assert torch.equal(out, torch.from_numpy(big))
    big[3, 1] = np.inf
    with pytest.raises(ValueError, match="X must be finite; it has 1 NaN"):
        check_tensor(big, "X", (None, 2))


def test_check_tensor_keeps_a_gradient_quietly():
    """A tensor that requires a gradient passes without a warning (no grad-to-scalar
    conversion) and still requires it."""
    import warnings

    x = torch.ones(3, 2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = check_tensor(x, "X", (None, 2))
    assert out.requires_grad


def test_check_tensor_booleans_only_when_allowed():
    flags = np.array([True, False])
    assert torch.equal(check_tensor(flags, "y", (2,), dtype=torch.float64),
                       torch.tensor([1.0, 0.0], dtype=torch.float64))
    with pytest.raises(ValueError, match="y must be real-valued, got dtype torch.bool"):
        check_tensor(flags, "y", (2,), allow_bool=False)


def test_check_choice_and_check_bool():
    assert check_choice("sgd", "optimizer", ("adam", "sgd")) == "sgd"
    with pytest.raises(ValueError, match=r"optimizer must be one of \('adam', 'sgd'\), got 'lbfgs'"):
        check_choice("lbfgs", "optimizer", ("adam", "sgd"))
    with pytest.raises(ValueError, match=r"activation must be one of \('relu',\), got \['relu'\]"):
        check_choice(["relu"], "activation", {"relu": None})  # unhashable: no TypeError
    assert check_bool(False, "bias") is False
    with pytest.raises(ValueError, match="bias must be True or False, got 1"):
        check_bool(1, "bias")


def test_check_bool_accepts_numpy_bool_only():
    assert check_bool(np.bool_(True), "flag") is True
    for bad in ("True", 1, 0, None):
        with pytest.raises(ValueError, match="flag"):
            check_bool(bad, "flag")


def test_tensor_requiring_grad_is_accepted_by_numpy_functions():
    """A torch tensor that requires a gradient is detached before NumPy reads it."""
    from routing.euclidean_lsh import EuclideanLSH
    from routing.lsh_table import LSHTable
    from routing.sdm import circle_intersection

    points = np.random.default_rng(0).uniform(-1, 1, (40, 2))
    X = torch.tensor(points, requires_grad=True)
    table = LSHTable(EuclideanLSH(2, 1, 0.5)).fit(X, points.sum(1))
    np.testing.assert_array_equal(table.predict(X), table.predict(points))
    assert circle_intersection(16, 3, torch.tensor([1, 2])).shape == (2,)


def test_seed_beyond_int64_is_refused_at_the_config():
    from routing.layers import SDMLPConfig

    with pytest.raises(ValueError, match="seed"):
        SDMLPConfig(d_in=2, n_neurons=8, k_target=2, seed=2**64)
    assert check_seed(2**63 - 1) == 2**63 - 1
