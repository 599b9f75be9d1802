"""Torch twins: same parameters, same buckets as the Numba paths; buffers; Top-K ties."""

import io

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.affine_hyperplane_lsh import AffineHyperplaneLSH
from routing.cross_polytope_lsh import CrossPolytopeLSH
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH
from routing.topk import topk_indices, topk_mask
from routing.torch_twins import (TorchCrossPolytopeLSH, TorchEuclideanLSH, TorchHyperplaneLSH,
                                 TorchUniformHash)
from routing.torch_twins import topk_indices as torch_topk_indices
from routing.torch_twins import topk_mask as torch_topk_mask
from routing.uniform_hash import UniformHash

DTYPES = [np.float32, np.float64]


def _points(n=4000, dim=12, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(-2, 2, (n, dim)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_euclidean_twin_agrees_away_from_boundaries(dtype, device="cpu"):
    h = EuclideanLSH(12, 10, width=0.4, n_tables=3, seed=1)
    X = _points(dtype=dtype)
    codes = h.to_torch().to(device)(torch.from_numpy(X).to(device)).cpu().numpy()
    q = (np.einsum("nd,thd->nth", X.astype(np.float64), h.directions) + h.offsets) / h.width
    clear = (np.abs(q - np.round(q)) > 1e-5).all(axis=(1, 2))  # 1e-5·width from every boundary
    assert clear.mean() > 0.9  # the comparison is not vacuous
    np.testing.assert_array_equal(codes[clear], h.hash(X)[clear])
    assert codes.dtype == np.int64 and codes.shape == (4000, 3, 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_bits", [5, 64])
def test_hyperplane_twin_agrees_away_from_hyperplanes(dtype, n_bits, device="cpu"):
    h = HyperplaneLSH(12, n_bits, n_tables=2, seed=2)
    X = _points(dtype=dtype)
    keys = h.to_torch().to(device)(torch.from_numpy(X).to(device)).cpu().numpy()
    proj = np.einsum("nd,tbd->ntb", X.astype(np.float64), h.directions)
    clear = (np.abs(proj) > 1e-5).all(axis=(1, 2))
    assert clear.mean() > 0.9
    np.testing.assert_array_equal(keys[clear], h.bucket_ids(X)[clear])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_bits", [5, 64])
def test_affine_twin_agrees_away_from_hyperplanes(dtype, n_bits, device="cpu"):
    h = AffineHyperplaneLSH(12, n_bits, n_tables=2, radius=2.0, seed=2)
    X = _points(dtype=dtype)
    twin = h.to_torch().to(device)
    keys = twin(torch.from_numpy(X).to(device)).cpu().numpy()
    proj = np.einsum("nd,tbd->ntb", X.astype(np.float64), h.directions) + h.offsets
    clear = (np.abs(proj) > 1e-5).all(axis=(1, 2))
    assert clear.mean() > 0.9
    np.testing.assert_array_equal(keys[clear], h.bucket_ids(X)[clear])
    assert twin.directions.shape == (2, n_bits, 13)  # [a, b]: a buffer, saved with the module
    with pytest.raises(ValueError, match=r"shape \(N, 12\)"):
        twin(torch.zeros(3, 13))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [10, 16])
def test_cross_polytope_twin_agrees(dtype, dim, device="cpu"):
    h = CrossPolytopeLSH(dim, n_rotations=3, n_tables=2, seed=3)
    X = _points(dim=dim, dtype=dtype)
    twin = h.to_torch().to(device)
    Xt = torch.from_numpy(X).to(device)
    np.testing.assert_array_equal(twin.codes(Xt).cpu().numpy(), h.hash(X))
    np.testing.assert_array_equal(twin(Xt).cpu().numpy(), h.bucket_ids(X))


@pytest.mark.parametrize("dtype", DTYPES)
def test_uniform_twin_agrees(dtype, device="cpu"):
    X = _points(dtype=dtype)
    X[0, 0] = -0.0
    for n_buckets in (1, 7, 2**40, 2**63 - 1):
        h = UniformHash(n_buckets, seed=5)
        out = h.to_torch().to(device)(torch.from_numpy(X).to(device)).cpu().numpy()
        np.testing.assert_array_equal(out, h.bucket_ids(X))


def test_buffers_survive_state_dict_and_follow_the_module():
    pairs = [(EuclideanLSH(6, 4, 0.5, n_tables=2, seed=0), EuclideanLSH(6, 4, 0.9, n_tables=2, seed=1)),
             (HyperplaneLSH(6, 9, n_tables=2, seed=0), HyperplaneLSH(6, 9, n_tables=2, seed=1)),
             (CrossPolytopeLSH(6, 2, n_tables=2, seed=0), CrossPolytopeLSH(6, 2, n_tables=2, seed=1)),
             (UniformHash(99, seed=0), UniformHash(99, seed=1))]
    X = torch.from_numpy(_points(n=300, dim=6))
    for source, target in pairs:
        a, b = source.to_torch(), target.to_torch()
        assert not torch.equal(a(X), b(X))
        buffer = io.BytesIO()
        torch.save(a.state_dict(), buffer)
        buffer.seek(0)
        b.load_state_dict(torch.load(buffer))
        assert torch.equal(a(X), b(X))
        assert set(dict(a.named_buffers())) == set(a.state_dict())  # every parameter a buffer
        assert not list(a.parameters())  # nothing trainable


def test_twins_reject_bad_input():
    h = HyperplaneLSH(4, 8).to_torch()
    with pytest.raises(ValueError, match=r"X must have shape \(N, 4\)"):
        h(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="X must be finite; it has 1 NaN"):
        h(torch.tensor([[0.0, 1.0, float("nan"), 2.0]]))
    with pytest.raises(ValueError, match="finite"):
        EuclideanLSH(4, 3, 1.0).to_torch()(torch.tensor([[float("inf"), 0, 0, 0]]))
    with pytest.raises(ValueError, match="too large"):
        EuclideanLSH(4, 3, 1e-300).to_torch()(torch.ones(2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="too large"):
        h(torch.full((2, 4), 1e38))
    with pytest.raises(ValueError, match="finite"):
        UniformHash(5).to_torch()(torch.tensor([[float("nan")]]))
    with pytest.raises(ValueError, match="n_bits"):
        TorchHyperplaneLSH(torch.zeros(1, 65, 3))
    with pytest.raises(ValueError, match="dim"):
        TorchCrossPolytopeLSH(torch.ones(1, 1, 3, 4, dtype=torch.int8), dim=5)
    assert isinstance(TorchEuclideanLSH.from_hasher(EuclideanLSH(2, 2, 1.0)), torch.nn.Module)
    assert isinstance(TorchUniformHash(3, 4), torch.nn.Module)


def test_topk_twins_break_ties_like_numpy():
    rng = np.random.default_rng(0)
    scores = rng.choice([-np.inf, -1.0, 0.0, 0.5, 2.0, np.inf], size=(500, 9))
    for k in range(1, 10):
        for dtype in (torch.float32, torch.float64):
            s = torch.from_numpy(scores).to(dtype)
            np.testing.assert_array_equal(torch_topk_indices(s, k).numpy(), topk_indices(scores, k))
            mask = torch_topk_mask(s, k).numpy()
            np.testing.assert_array_equal(mask, topk_mask(scores, k))
            assert (mask.sum(axis=1) == k).all()
    ints = torch.tensor([[3, 1, 3, 3], [0, 0, 0, 0]])
    np.testing.assert_array_equal(torch_topk_mask(ints, 2).numpy(), [[1, 0, 1, 0], [1, 1, 0, 0]])


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(0, 40), n=st.integers(1, 70), data=st.data(),
       dtype=st.sampled_from([torch.float32, torch.float64, torch.int32, torch.int64,
                              torch.float16]))
def test_kth_largest_equals_torch_topk(rows, n, data, dtype):
    """numpy.partition's k-th largest (CPU float32/64, int32/64) is torch.topk's value, ties,
    infinities and NaN (the largest in both) included; float16 takes torch.topk itself."""
    from routing.torch_twins import kth_largest

    k = data.draw(st.integers(1, n))
    seed = data.draw(st.integers(0, 2**31))
    g = np.random.default_rng(seed)
    values = g.choice([-np.inf, -2.0, -0.5, 0.0, 0.5, 3.0, np.inf, np.nan], size=(rows, n)) \
        if dtype.is_floating_point and g.random() < 0.5 else g.integers(-5, 6, (rows, n))
    scores = torch.from_numpy(np.asarray(values, dtype=np.float64)).to(dtype)
    expected = torch.topk(scores, k, dim=1).values[:, -1:]
    got = kth_largest(scores, k)
    assert got.dtype == scores.dtype and got.shape == (rows, 1)
    assert torch.equal(got.isnan(), expected.isnan())
    assert torch.equal(got.nan_to_num(), expected.nan_to_num())
    # a transposed (non-contiguous) tensor gives the same values
    assert torch.equal(kth_largest(scores.T.contiguous().T, k).nan_to_num(), got.nan_to_num())


def test_kth_largest_rejects_bad_input():
    from routing.torch_twins import kth_largest

    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 3\]"):
        kth_largest(torch.zeros(2, 3), 4)
    with pytest.raises(ValueError, match="2-D real"):
        kth_largest(torch.zeros(3), 1)
    with pytest.raises(ValueError, match="2-D real"):
        kth_largest(torch.zeros(2, 3, dtype=torch.bool), 1)


def test_topk_twins_reject_bad_input():
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 3\]"):
        torch_topk_mask(torch.zeros(2, 3), 4)
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 3\]"):
        torch_topk_indices(torch.zeros(2, 3), 0)
    with pytest.raises(ValueError, match="NaN"):
        torch_topk_mask(torch.tensor([[0.0, float("nan")]]), 1)
    with pytest.raises(ValueError, match="shape"):
        torch_topk_indices(torch.zeros(3), 1)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES)
def test_twins_on_cuda_agree_with_numba(dtype):
    test_euclidean_twin_agrees_away_from_boundaries(dtype, device="cuda")
    test_hyperplane_twin_agrees_away_from_hyperplanes(dtype, 64, device="cuda")
    test_uniform_twin_agrees(dtype, device="cuda")
    # the CUDA FWHT may round differently from the CPU: compare away from near-ties
    h = CrossPolytopeLSH(16, n_rotations=2, n_tables=2, seed=3)
    X = _points(dim=16, dtype=dtype)
    same = (h.to_torch().cuda().codes(torch.from_numpy(X).cuda()).cpu().numpy() == h.hash(X))
    assert same.mean() > 0.999
    scores = torch.randint(0, 3, (300, 8)).double()
    np.testing.assert_array_equal(torch_topk_mask(scores.cuda(), 3).cpu().numpy(),
                                  topk_mask(scores.numpy(), 3))


def test_torch_euclidean_twin_refuses_mismatched_parameters():
    with pytest.raises(ValueError, match=r"offsets must have shape \(2, 3\)"):
        TorchEuclideanLSH(torch.randn(2, 3, 4), torch.rand(3, 2), 1.0)
    codes = TorchEuclideanLSH(torch.randn(2, 3, 4), torch.rand(2, 3), 1.0)(torch.randn(5, 4))
    assert codes.shape == (5, 2, 3)
