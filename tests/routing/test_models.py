"""routing.models: forward passes against slow references, masks, costs, errors, CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.models import DSM, Dense, LSHModel, RandomHashModel
from routing.models._sparse_dot import fused_sparse_dot, sparse_dot, sparse_dot_reference
from routing.models._topk_kernel import (
    bottom_groups, bracket_quantiles, relu_topk, relu_topk_reference, unit_moments,
)
from routing.models.lsh_model import HASH_FAMILIES, MAX_TABLE_VALUES, lsh_hasher
from experiments.kinds.linear import LSH_FAMILIES
from routing._projection import pack_groups
from routing.affine_hyperplane_lsh import AffineHyperplaneLSH
from routing.cross_polytope_lsh import CrossPolytopeLSH
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH
from routing.uniform_hash import UniformHash


pytestmark = pytest.mark.usefixtures("one_thread")


def cube(n, dim, seed=0, dtype=np.float32):
    return (np.random.default_rng(seed).uniform(-1, 1, (n, dim))).astype(dtype)


def randomise(model, seed=1):
    """Random trainable parameters (the models start at zero, which would hide errors)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype))
    return model


def numpy_phi(model, X):
    B = model.B.double().numpy()
    c = model.c.double().numpy()
    return np.maximum(X.astype(np.float64) @ B.T + c, 0.0)


def stable_topk_mask(scores, k):
    """Slow reference of the Top-K rule: stable sort, ties by lowest index."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    mask = np.zeros(scores.shape, bool)
    np.put_along_axis(mask, order, True, axis=1)
    return mask


# --------------------------------------------------------------------------------------------
# forward passes against slow references


def test_dense_forward_equals_numpy():
    model = randomise(Dense(5, 40, seed=3))
    X = cube(64, 5)
    ref = numpy_phi(model, X) @ model.weight.detach().double().numpy()[0] + float(model.bias.detach())
    np.testing.assert_allclose(model(X).detach().numpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("width,k", [(64, 1), (64, 7), (64, 63), (64, 64), (300, 19)])
def test_dsm_forward_equals_masked_dense_product(width, k):
    model = randomise(DSM(6, width, k, seed=2)).double()
    X = cube(200, 6, dtype=np.float64)
    phi = numpy_phi(model, X)
    mask = stable_topk_mask(phi, k)
    A = model.weight.detach().numpy()[0]
    ref = ((A * mask) * phi).sum(axis=1) + float(model.bias.detach())  # (A ∘ mask(x)) φ(x)
    out = model(X).detach().numpy()  # CPU kernel path
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-10)
    # the torch path (used on CUDA and for dg/dx) agrees as well
    Xt = torch.from_numpy(X).requires_grad_()
    np.testing.assert_allclose(model(Xt).detach().numpy(), ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(model.mask(X).numpy(), mask)


def test_dsm_float32_kernel_matches_torch_path():
    model = randomise(DSM(8, 512, 32, seed=0))
    X = torch.from_numpy(cube(300, 8))
    fast = model.features(X)
    cols, vals = relu_topk_reference(X, model.B, model.c, model.k)
    assert (fast.cols == cols).float().mean() > 0.999  # float32 rounding may swap a near tie
    np.testing.assert_allclose(model(X).detach().numpy(),
                               model(X.clone().requires_grad_()).detach().numpy(), atol=1e-4)


def test_dsm_kernel_layout_follows_the_bottom_layer():
    """The kernel's cached copy of [B | c] is rebuilt for a new dtype and after load_state_dict."""
    X = torch.from_numpy(cube(64, 5))
    model, other = DSM(5, 200, 12, seed=0), DSM(5, 200, 12, seed=1)
    before = model.features(X).cols
    model.load_state_dict(other.state_dict())
    np.testing.assert_array_equal(model.features(X).cols, other.features(X).cols)
    assert not torch.equal(model.features(X).cols, before)
    np.testing.assert_array_equal(model.double().features(X.double()).cols,
                                  other.double().features(X.double()).cols)


def test_dsm_top_layer_reads_only_active_columns():
    model = DSM(4, 50, 5, seed=0)
    X = cube(30, 4)
    active = model.mask(X).any(dim=0)
    with torch.no_grad():
        model.weight[0, ~active] = float("nan")  # never read: must not reach the output
    model.weight.data[0, active] = 1.0
    assert torch.isfinite(model(X)).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 333])  # empty, partial and whole blocks of 8 rows
def test_dsm_fused_forward_equals_features_then_top_layer(dtype, n):
    """The CPU forward takes the top layer inside the Top-K kernel (winners kept with uint16
    indices for the backward): the same output and the same gradients, bit for bit, as the
    two halves."""
    model = randomise(DSM(8, 1000, 60, seed=4)).to(dtype)
    X = model.prepare(cube(n, 8, seed=2, dtype=np.float64))
    y = torch.randn(n, generator=torch.Generator().manual_seed(0), dtype=dtype)
    results = []
    for forward in (model.forward_prepared, lambda X: model.top_layer(model.features(X))):
        model.zero_grad(set_to_none=True)
        out = forward(X)
        ((out - y) ** 2).sum().backward()
        results.append((out.detach(), model.weight.grad, model.bias.grad))
    for fused, plain in zip(*results):
        assert torch.equal(fused, plain)
    assert results[0][0].shape == (n,)


@pytest.mark.parametrize("index", [torch.int64, torch.int32, torch.uint16])
def test_fused_sparse_dot_gradient_for_every_index_type(index):
    """The fused path keeps its winners as uint16 (width <= 2^16) or int32: the same θ
    gradient as int64 indices, repeated columns included."""
    gen = torch.Generator().manual_seed(3)
    theta = torch.randn(300, generator=gen, dtype=torch.float64)
    cols = torch.randint(0, 300, (50, 9), generator=gen)
    vals = torch.randn(50, 9, generator=gen, dtype=torch.float64)
    weights = torch.randn(50, generator=gen, dtype=torch.float64)
    t = theta.clone().requires_grad_()

    def compute(th):
        return sparse_dot_reference(th, cols, vals), cols.to(index), vals

    out = fused_sparse_dot(t, compute)
    (out * weights).sum().backward()
    expected = torch.zeros(300, dtype=torch.float64).index_add_(
        0, cols.reshape(-1), (weights[:, None] * vals).reshape(-1))
    torch.testing.assert_close(t.grad, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out, sparse_dot_reference(theta, cols, vals))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16])  # Numba kernel, torch path
def test_sparse_dot_adds_the_bias_inside_with_its_gradient(dtype):
    """The bias folded into the product (one autograd node): the same bits as ``out + bias``,
    dL/d(bias) = Σ dL/dout, and θ's gradient unchanged; the fused form likewise."""
    gen = torch.Generator().manual_seed(5)
    theta = torch.randn(60, generator=gen).to(dtype)
    cols = torch.randint(0, 60, (30, 7), generator=gen)
    vals = torch.randn(30, 7, generator=gen).to(dtype)
    weights = torch.randn(30, generator=gen).to(dtype)
    bias = torch.tensor(0.37, dtype=dtype)

    def run(fn):
        t, b = theta.clone().requires_grad_(), bias.clone().requires_grad_()
        out = fn(t, b)
        (out * weights).sum().backward()
        return out.detach(), t.grad, b.grad

    expected = run(lambda t, b: sparse_dot(t, cols, vals) + b)
    folded = run(lambda t, b: sparse_dot(t, cols, vals, b))
    fused = run(lambda t, b: fused_sparse_dot(
        t, lambda th: (sparse_dot(th, cols, vals), cols.to(torch.int32), vals), b))
    # θ given as a (1, n_coef) parameter (no view node): the gradient comes in that shape
    for form in (lambda t: sparse_dot(t, cols, vals, bias),
                 lambda t: fused_sparse_dot(t, lambda th: (sparse_dot(th, cols, vals), cols,
                                                          vals), bias)):
        row_param = theta.view(1, -1).clone().requires_grad_()
        out = form(row_param)
        (out * weights).sum().backward()
        assert torch.equal(out.detach(), expected[0])
        assert row_param.grad.shape == (1, 60) and torch.equal(row_param.grad[0], expected[1])
    for got in (folded, fused):
        for a, e in zip(got, expected):
            assert torch.equal(a, e)
    assert expected[2].shape == () and torch.equal(expected[2], weights.sum())


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_topk_kernel_splits_rows_over_threads(threads):
    """One task (one set of scratch buffers) per Numba thread: the same winners for any count."""
    import numba

    if threads > numba.config.NUMBA_NUM_THREADS:
        pytest.skip(f"Numba has {numba.config.NUMBA_NUM_THREADS} threads")
    rng = np.random.default_rng(8)
    B, c = rng.standard_normal((700, 5)), rng.standard_normal(700)
    X = rng.uniform(-1, 1, (83, 5))  # 11 blocks of 8 rows, the last partial
    old = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        cols, vals = kernel_winners(X, B, c, 40)
    finally:
        numba.set_num_threads(old)
    expected_cols, expected_vals = expected_winners(X, B, c, 40)
    np.testing.assert_array_equal(cols, expected_cols)
    np.testing.assert_allclose(vals, expected_vals, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("active", [1, 7, 37])  # the kernel sums four terms at a time
def test_sparse_dot_kernels_match_torch_reference(dtype, active):
    gen = torch.Generator().manual_seed(0)
    theta = torch.randn(50, generator=gen, dtype=dtype)
    cols = torch.randint(0, 50, (40, active), generator=gen)  # repeated columns included
    vals = torch.randn(40, active, generator=gen, dtype=dtype)
    weights = torch.randn(40, generator=gen, dtype=dtype)
    results = []
    for fn in (sparse_dot, sparse_dot_reference):
        t = theta.clone().requires_grad_()
        out = fn(t, cols, vals)
        (out * weights).sum().backward()
        results.append((out.detach(), t.grad))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(results[0][0], results[1][0], **tol)
    torch.testing.assert_close(results[0][1], results[1][1], **tol)


@st.composite
def tie_problems(draw):
    """Small integer-valued layers: many exactly equal activations (ties), zeros included."""
    dim = draw(st.integers(1, 4))
    width = draw(st.integers(1, 40))
    k = draw(st.integers(1, width))
    n = draw(st.integers(1, 20))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    spread = draw(st.sampled_from([1, 2, 5]))
    X = rng.integers(-spread, spread + 1, (n, dim)).astype(np.float64)
    B = rng.integers(-1, 2, (width, dim)).astype(np.float64)
    c = rng.integers(-1, 2, width).astype(np.float64)
    return X, B, c, k


def kernel_winners(X, B, c, k):
    """(cols, vals) of the CPU Top-K kernel for the layer (B, c)."""
    cols = np.full((len(X), k), -1, np.int64)  # not np.empty: a row left unwritten would
    vals = np.full((len(X), k), np.nan, X.dtype)  # show an earlier call's answer
    relu_topk(X, bottom_groups(B, c, X.dtype), len(c), unit_moments(B, c), k,
              bracket_quantiles(len(c), k), cols, vals)
    return cols, vals


def expected_winners(X, B, c, k):
    """Independent answer: a stable argsort of φ = ReLU(XBᵀ + c) (ties to the lowest index)."""
    phi = np.maximum(X @ B.T + c, 0)
    cols = np.sort(np.argsort(-phi, axis=1, kind="stable")[:, :k], axis=1)
    return cols, np.take_along_axis(phi, cols, axis=1)


@given(tie_problems())
def test_topk_kernel_ties_go_to_lowest_index(problem):
    X, B, c, k = problem
    cols, vals = kernel_winners(X, B, c, k)
    expected_cols, expected_vals = expected_winners(X, B, c, k)
    np.testing.assert_array_equal(cols, expected_cols)
    np.testing.assert_array_equal(vals, expected_vals)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_topk_kernel_wide_integer_layers_tie_in_the_bracket(dtype):
    """Wide layers (the bracket guess holds, so the bit-pattern bisection runs) whose integer
    activations tie at the k-th value: exact winners, lowest indices first, in both dtypes;
    widths that are not a multiple of 64 exercise the padded flag masks."""
    rng = np.random.default_rng(11)
    for width, k in ((1000, 60), (4096, 256), (130, 9)):
        B = rng.integers(-3, 4, (width, 6)).astype(dtype)
        c = rng.integers(0, 3, width).astype(dtype)
        X = rng.integers(-2, 3, (41, 6)).astype(dtype)  # odd: the last row has no pair
        cols, vals = kernel_winners(X, B, c, k)
        expected_cols, expected_vals = expected_winners(X, B, c, k)
        np.testing.assert_array_equal(cols, expected_cols)
        np.testing.assert_array_equal(vals, expected_vals)


@settings(max_examples=40, deadline=None)
@given(dim=st.integers(1, 10), width=st.integers(2, 3000), k_fraction=st.floats(0, 1),
       n=st.integers(1, 20), seed=st.integers(0, 2**16), bias=st.sampled_from([0.0, 0.5, 3.0]))
def test_topk_kernel_exact_on_gaussian_layers(dim, width, k_fraction, n, seed, bias):
    """The model's own kind of layer, where the guessed brackets usually hold (and the
    inner one sometimes misses): the exact winners and their activations, in float64 (no
    near-ties within rounding)."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((width, dim)) / np.sqrt(dim)
    c = rng.standard_normal(width) * 0.5 + bias
    X = rng.uniform(-1, 1, (n, dim))
    k = 1 + int(k_fraction * (width - 1))
    cols, vals = kernel_winners(X, B, c, k)
    expected_cols, expected_vals = expected_winners(X, B, c, k)
    np.testing.assert_array_equal(cols, expected_cols)
    np.testing.assert_allclose(vals, expected_vals, rtol=1e-12, atol=1e-12)
    # the fused top layer: int32 winners, and out = Σ θ[cols]·vals as sparse_dot computes it
    theta = rng.standard_normal(width)
    cols32, vals32, out = np.empty((n, k), np.int32), np.empty((n, k)), np.empty(n)
    relu_topk(X, bottom_groups(B, c, X.dtype), width, unit_moments(B, c), k,
              bracket_quantiles(width, k), cols32, vals32, theta, out)
    np.testing.assert_array_equal(cols32, expected_cols)
    np.testing.assert_array_equal(vals32, vals)
    expected_out = sparse_dot(torch.from_numpy(theta), torch.from_numpy(cols),
                              torch.from_numpy(vals)).numpy()
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_allclose(out, (theta[expected_cols] * expected_vals).sum(axis=1),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_topk_kernel_large_k_takes_the_positive_units_first(dtype):
    """k >= width / 2 puts the guessed lower bound at or below 0: the candidates are then the
    positive units, and every unit when fewer than k are positive (bias -1: every row; +1:
    few): exact either way, in both dtypes."""
    rng = np.random.default_rng(12)
    width, dim = 500, 6
    B = rng.standard_normal((width, dim)) / np.sqrt(dim)
    X = rng.uniform(-1, 1, (37, dim)).astype(dtype)
    positives = []  # per row: both regimes must occur
    for bias in (-1.0, 0.0, 1.0):
        c = rng.standard_normal(width) * 0.5 + bias
        positives.extend((X.astype(np.float64) @ B.T + c > 0).sum(axis=1))
        for k in (250, 350, 499):
            cols, vals = kernel_winners(X, B, c, k)
            expected_cols, expected_vals = expected_winners(X.astype(np.float64), B, c, k)
            np.testing.assert_array_equal(cols, expected_cols)
            tol = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(vals, expected_vals, rtol=tol, atol=tol)
    assert min(positives) < 250 and max(positives) >= 350


def test_topk_kernel_rejects_groups_not_from_bottom_groups():
    """pack_groups alone gives 1 group for 10 units: the kernel reads 3 (float32) at a time."""
    rng = np.random.default_rng(0)
    B, c = rng.standard_normal((10, 3)), rng.standard_normal(10)
    X = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    cols, vals = np.empty((4, 2), np.int64), np.empty((4, 2), np.float32)
    loose = pack_groups(np.c_[B, c][None], np.float32)
    with pytest.raises(ValueError, match="groups must be bottom_groups"):
        relu_topk(X, loose, 10, unit_moments(B, c), 2, bracket_quantiles(10, 2), cols, vals)
    with pytest.raises(ValueError, match="groups must be bottom_groups"):  # another dtype's
        relu_topk(X, bottom_groups(B, c, np.float64).astype(np.float32), 10, unit_moments(B, c),
                  2, bracket_quantiles(10, 2), cols, vals)


def test_topk_kernel_survives_non_gaussian_rows():
    """Heavy-tailed and constant rows defeat the Gaussian threshold guess: still exact."""
    rng = np.random.default_rng(5)
    B = rng.standard_cauchy((500, 3))
    c = np.zeros(500)
    c[:250] = 7.0  # half the units tie at 7 when Bx is small
    X = np.vstack([rng.uniform(-1, 1, (50, 3)), np.zeros((5, 3))])
    for k in (1, 10, 250, 251, 499):
        np.testing.assert_array_equal(kernel_winners(X, B, c, k)[0],
                                      expected_winners(X, B, c, k)[0])


def test_random_hash_forward_equals_hash_and_sum_loop():
    dim, width, k, seed = 3, 48, 8, 4
    model = randomise(RandomHashModel(dim, width, k, seed=seed))
    X = cube(40, dim)
    hasher = UniformHash(width // k, seed=seed, dim=dim)
    B, c = model.B.double().numpy(), model.c.double().numpy()
    A, a0 = model.weight.detach().double().numpy()[0], float(model.bias.detach())
    expected = []
    for x in X:
        block = int(hasher.bucket_ids(x[None])[0, 0])
        total = a0
        for j in range(block * k, (block + 1) * k):
            total += A[j] * max(float(B[j] @ x.astype(np.float64) + c[j]), 0.0)
        expected.append(total)
    np.testing.assert_allclose(model(X).detach().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_random_hash_ignores_geometry():
    """Nearby points land in unrelated blocks (unlike DSM, whose masks overlap)."""
    model = RandomHashModel(2, 64, 4, seed=0)
    x = np.full((200, 2), 0.3, np.float32)
    x[:, 0] += np.arange(200, dtype=np.float32) * 1e-4  # a tiny segment
    blocks = model.blocks(model.prepare(x)).numpy()
    assert len(np.unique(blocks)) > 12  # 16 blocks; a local router would use 1 or 2


@pytest.mark.parametrize("n_bits,n_tables", [(4, 1), (7, 3)])
def test_lsh_forward_equals_bucket_dictionary(n_bits, n_tables):
    dim, seed = 5, 11
    model = randomise(LSHModel(dim, n_bits=n_bits, n_tables=n_tables, seed=seed))
    X = cube(100, dim)
    keys = HyperplaneLSH(dim, n_bits, n_tables, seed=seed).bucket_ids(X)  # numpy hasher
    values = model.values.detach().numpy()[:, :, 0]
    table = {(t, z): float(values[t, z]) for t in range(n_tables) for z in range(2**n_bits)}
    expected = [np.mean([table[(t, int(key[t]))] for t in range(n_tables)]) for key in keys]
    np.testing.assert_allclose(model(X).detach().numpy(), expected, rtol=1e-6, atol=1e-6)


def test_lsh_degree_one_is_a_linear_function_per_bucket():
    dim = 3
    model = randomise(LSHModel(dim, n_bits=3, degree=1, seed=0))
    X = cube(50, dim)
    keys = HyperplaneLSH(dim, 3, 1, seed=0).bucket_ids(X)[:, 0]
    coef = model.values.detach().numpy()[0]  # (8, 1 + dim): constant, x0, x1, x2
    expected = [coef[z, 0] + coef[z, 1:] @ x for z, x in zip(keys, X)]
    np.testing.assert_allclose(model(X).detach().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_lsh_with_euclidean_hasher_shares_values_exactly_within_buckets():
    hasher = EuclideanLSH(4, n_hashes=3, width=0.8, n_tables=2, seed=0)
    model = randomise(LSHModel(4, n_bits=20, hasher=hasher))
    X = cube(300, 4)
    codes = hasher.hash(X)  # (N, 2, 3)
    slots = model.slots(model.prepare(X)).numpy()
    for t in range(2):
        by_code = {}
        for code, slot in zip(map(tuple, codes[:, t]), slots[:, t]):
            assert by_code.setdefault(code, slot) == slot  # equal codes, equal slot
        assert len(set(by_code.values())) == len(by_code)  # no collision at 2^20 slots


@pytest.mark.parametrize("n_tables", [1, 3])
def test_lsh_with_affine_hasher_equals_explicit_affine_signs(n_tables):
    """Each table's bucket is the sign pattern of a·x + b, computed here by hand from the
    hasher's directions and offsets (float64; points within 1e-6 of a hyperplane skipped),
    and the model averages the bucket values of the s tables."""
    dim, n_bits = 5, 6
    hasher = AffineHyperplaneLSH(dim, n_bits, n_tables, seed=4)
    model = randomise(LSHModel(dim, n_bits=n_bits, hasher=hasher)).double()
    X = cube(400, dim, seed=2, dtype=np.float64)
    proj = np.einsum("nd,tbd->ntb", X, hasher.directions) + hasher.offsets  # (N, s, bits)
    keys = ((proj >= 0).astype(np.int64) << np.arange(n_bits)).sum(axis=2)  # (N, s)
    clear = (np.abs(proj) > 1e-6).all(axis=(1, 2))
    assert clear.mean() > 0.95
    values = model.values.detach().numpy()[:, :, 0]
    expected = np.mean([values[t, keys[:, t]] for t in range(n_tables)], axis=0)
    np.testing.assert_allclose(model(X).detach().numpy()[clear], expected[clear], rtol=1e-12)
    np.testing.assert_array_equal(model.slots(model.prepare(X)).numpy()[clear], keys[clear])
    # offsets put every hyperplane through a point of the cube: both sides hold data
    bits = proj >= 0
    assert bits.any(axis=0).all() and (~bits).any(axis=0).all()


def test_lsh_with_uniform_hasher_uses_the_uniform_buckets():
    hasher = UniformHash(2**7, seed=3, dim=4)
    model = randomise(LSHModel(4, n_bits=7, hasher=hasher))
    X = cube(300, 4)
    buckets = hasher.bucket_ids(X)[:, 0]
    np.testing.assert_array_equal(model.slots(model.prepare(X)).numpy()[:, 0], buckets)
    np.testing.assert_allclose(model(X).detach().numpy(),
                               model.values.detach().numpy()[0, buckets, 0], rtol=1e-6)


@pytest.mark.parametrize("family,kwargs", [("sign", {}), ("affine", {}), ("uniform", {}),
                                           ("euclidean", dict(n_hashes=3, bucket_width=0.7))])
def test_n_nonempty_counts_the_distinct_buckets_of_every_table(family, kwargs):
    """Against the numpy hasher's keys (an independent path for every family but euclidean,
    whose slots are the folded code vectors: there, against the distinct code vectors, which
    the 2^20 slots keep apart)."""
    n_tables = 1 if family == "uniform" else 3
    n_bits = {"euclidean": 20, "uniform": 10}.get(family, 6)
    hasher = lsh_hasher(family, 4, n_bits, n_tables, seed=5, **kwargs)
    model = LSHModel(4, n_bits=n_bits, hasher=hasher)
    X = cube(500, 4, seed=6)
    if family == "euclidean":
        codes = hasher.hash(X)  # (N, s, H)
        expected = sum(len({tuple(c) for c in codes[:, t]}) for t in range(n_tables))
    else:
        keys = hasher.bucket_ids(X)
        expected = sum(len(np.unique(keys[:, t])) for t in range(n_tables))
    assert model.n_nonempty(X) == model.n_nonempty(X, batch_size=7) == expected
    assert 0 < expected < min(500 * n_tables, n_tables * 2**n_bits)  # not trivially full
    assert model.n_nonempty(np.zeros((0, 4), np.float32)) == 0


def test_lsh_hasher_families_and_defaults():
    assert HASH_FAMILIES == LSH_FAMILIES  # the spec's copy, kept without importing torch
    sign = lsh_hasher("sign", 6, 5, 2, seed=9)
    default = LSHModel(6, n_bits=5, n_tables=2, seed=9)  # the model's default hasher
    np.testing.assert_array_equal(sign.directions, HyperplaneLSH(6, 5, 2, seed=9).directions)
    X = cube(50, 6)
    np.testing.assert_array_equal(LSHModel(6, n_bits=5, hasher=sign).slots(torch.from_numpy(X)),
                                  default.slots(torch.from_numpy(X)))
    affine = lsh_hasher("affine", 6, 5, 2, seed=9)
    assert isinstance(affine, AffineHyperplaneLSH) and affine.radius == 1.0
    euclidean = lsh_hasher("euclidean", 6, 12, 2, seed=9, n_hashes=4, bucket_width=0.5)
    assert (euclidean.n_hashes, euclidean.width, euclidean.n_tables) == (4, 0.5, 2)
    uniform = lsh_hasher("uniform", 6, 5, seed=9)
    assert (uniform.n_buckets, uniform.dim) == (32, 6)


@pytest.mark.parametrize("call,name", [
    (lambda: lsh_hasher("cosine", 4, 5), "family"),
    (lambda: lsh_hasher("euclidean", 4, 5, bucket_width=1.0), "n_hashes"),
    (lambda: lsh_hasher("euclidean", 4, 5, n_hashes=2), "bucket_width"),
    (lambda: lsh_hasher("euclidean", 4, 5, n_hashes=2, bucket_width=0.0), "bucket_width"),
    (lambda: lsh_hasher("sign", 4, 5, n_hashes=2), "n_hashes"),
    (lambda: lsh_hasher("affine", 4, 5, bucket_width=1.0), "bucket_width"),
    (lambda: lsh_hasher("uniform", 4, 5, n_tables=2), "n_tables"),
    (lambda: lsh_hasher("sign", 4, 0), "n_bits"),
    (lambda: lsh_hasher("sign", 4, 63), "n_bits"),
])
def test_lsh_hasher_rejects_bad_arguments(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_shift_output_moves_every_prediction_and_needs_a_bias_or_an_override():
    X = cube(40, 3)
    for model in (randomise(Dense(3, 8)), randomise(LSHModel(3, n_bits=4, n_tables=3)),
                  randomise(DSM(3, 8, 2))):
        before = model(X).detach().numpy().astype(np.float64)
        model.shift_output(2.5)
        np.testing.assert_allclose(model(X).detach().numpy(), before + 2.5, rtol=1e-6)

    class NoBias(Dense):
        def __init__(self):
            super().__init__(3, 4)
            del self.bias
            self.register_parameter("bias", None)

    with pytest.raises(NotImplementedError, match="shift_output"):
        NoBias().shift_output(1.0)


# --------------------------------------------------------------------------------------------
# exactly k active units


@pytest.mark.parametrize("cls", [DSM, RandomHashModel])
def test_exactly_k_active_units(cls):
    model = cls(8, 256, 16, seed=1)
    X = np.vstack([cube(500, 8), np.zeros((3, 8), np.float32), np.full((2, 8), 5.0, np.float32)])
    mask = model.mask(X)
    assert mask.shape == (len(X), 256)
    assert (mask.sum(dim=1) == 16).all()
    f = model.features(model.prepare(X))
    assert f.cols.shape == (len(X), 16)
    assert (f.cols.diff(dim=1) > 0).all()  # distinct and increasing


def test_dsm_exactly_k_even_when_fewer_than_k_units_fire():
    model = DSM(2, 30, 20, seed=0)
    with torch.no_grad():
        model.c.fill_(-10.0)  # every activation is 0: all ties, lowest indices win
    mask = model.mask(cube(5, 2))
    assert (mask.sum(dim=1) == 20).all()
    assert mask[:, :20].all()


# --------------------------------------------------------------------------------------------
# sizes and FLOPs

d, W, k, s, m, P = sympy.symbols("d W k s m P", positive=True, integer=True)
FLOPS = {
    "paper": lambda units: 2 * (d + 1) * units,
    "dense": 2 * (d + 1) * W,
    "dsm": 2 * d * W + W + 2 * k,
    "random_hash": 10 * (d + 1) + 2 + 2 * d * k + 2 * k,
    "lsh": s * 2 * d * m + s,
    "lsh_poly": s * 2 * d * m + s + (P - 1 - d) + s * (2 * P - 1),
}


@pytest.mark.parametrize("dim,width,kk", [(8, 1024, 64), (3, 96, 8), (64, 4096, 256)])
def test_flops_equal_the_formulas(dim, width, kk):
    subs = {d: dim, W: width, k: kk}
    dense, dsm, rh = Dense(dim, width), DSM(dim, width, kk), RandomHashModel(dim, width, kk)
    assert dense.flops_paper() == FLOPS["paper"](W).subs(subs) == dense.flops_true()
    assert dense.flops_true() == FLOPS["dense"].subs(subs)
    assert dsm.flops_paper() == FLOPS["paper"](k).subs(subs)
    assert dsm.flops_true() == FLOPS["dsm"].subs(subs)
    assert rh.flops_paper() == FLOPS["paper"](k).subs(subs)
    assert rh.flops_true() == FLOPS["random_hash"].subs(subs)
    # routing makes DSM as costly as dense in the true count; random hashing does not
    assert dsm.flops_true() > 0.9 * dense.flops_true() * (2 * dim) / (2 * dim + 2)
    assert rh.flops_true() < dsm.flops_true()


@pytest.mark.parametrize("dim,bits,tables,degree", [(8, 10, 1, 0), (8, 6, 4, 0), (5, 3, 2, 2)])
def test_lsh_flops_and_sizes(dim, bits, tables, degree):
    model = LSHModel(dim, n_bits=bits, n_tables=tables, degree=degree)
    n_feat = sympy.binomial(d + degree, degree).subs(d, dim)
    subs = {d: dim, m: bits, s: tables, P: n_feat}
    assert model.flops_paper() == FLOPS["paper"](s).subs(subs)
    formula = FLOPS["lsh_poly"] if degree else FLOPS["lsh"]
    assert model.flops_true() == formula.subs(subs)
    assert model.total_units == tables * 2**bits == model.buckets
    assert model.activated_units == tables
    assert model.n_params == tables * 2**bits * n_feat


def test_lsh_flops_of_the_other_families():
    """Affine hyperplanes project [x, 1] (dim + 1 multiply-adds per bit); the uniform hash
    costs RandomHashModel's 10·(dim + 1) + 2 integer operations, plus the one value."""
    dim, bits, tables = 8, 6, 4
    affine = LSHModel(dim, n_bits=bits, hasher=AffineHyperplaneLSH(dim, bits, tables))
    assert affine.flops_true() == tables * 2 * (dim + 1) * bits + tables
    euclidean = LSHModel(dim, n_bits=12, hasher=EuclideanLSH(dim, 5, 1.0, n_tables=tables))
    assert euclidean.flops_true() == tables * 2 * dim * 5 + tables
    uniform = LSHModel(dim, n_bits=bits, hasher=UniformHash(2**bits, dim=dim))
    assert uniform.flops_true() == 10 * (dim + 1) + 2 + 1
    assert uniform.flops_paper() == 2 * (dim + 1)  # one activated bucket


def test_table1_flops_column():
    """Baykal et al. 2022, Table 1: dense and DSM at 50% / 25% sparsity with equal FLOPs."""
    for units, flops in [(1024, 18432), (2048, 36864), (4096, 73728)]:
        assert Dense(8, units).flops_paper() == flops
        assert DSM(8, 2 * units, units).flops_paper() == flops  # 50% sparsity
        assert DSM(8, 4 * units, units).flops_paper() == flops  # 25% sparsity


def test_sizes_and_describe():
    dense, dsm = Dense(8, 128, seed=5), DSM(8, 128, 16, seed=5)
    assert (dense.total_units, dense.activated_units, dense.n_params) == (128, 128, 129)
    assert (dsm.total_units, dsm.activated_units, dsm.n_params) == (128, 16, 129)
    assert torch.equal(dense.B, dsm.B) and torch.equal(dense.c, dsm.c)  # same seed, same layer
    assert not torch.equal(Dense(8, 128, seed=6).B, dense.B)
    info = dsm.describe()
    assert info["model"] == "dsm" and info["width"] == 128 and info["k"] == 16
    assert info["buckets"] is None and info["flops_true"] == dsm.flops_true()
    lsh = LSHModel(8, n_bits=5, n_tables=2).describe()
    assert lsh["buckets"] == 64 and lsh["activated_units"] == 2 and lsh["width"] is None


def test_state_dict_round_trip_keeps_frozen_parts():
    for make in (lambda seed: DSM(4, 32, 4, seed=seed),
                 lambda seed: RandomHashModel(4, 32, 4, seed=seed),
                 lambda seed: LSHModel(4, n_bits=5, n_tables=2, seed=seed)):
        source = randomise(make(1))
        target = make(2)
        target.load_state_dict(source.state_dict())
        X = cube(20, 4)
        torch.testing.assert_close(target(X), source(X))


def test_double_precision_and_numpy_or_torch_inputs():
    model = randomise(DSM(3, 20, 4)).double()
    X = cube(10, 3, dtype=np.float64)
    out = model(X)
    assert out.dtype == torch.float64 and out.shape == (10,)
    torch.testing.assert_close(out, model(torch.from_numpy(X)))
    assert model(np.zeros((0, 3))).shape == (0,)


# --------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("make,name", [
    (lambda: DSM(8, 16, 17), "k"),
    (lambda: DSM(8, 16, 0), "k"),
    (lambda: DSM(8, 0, 1), "width"),
    (lambda: Dense(8, 0), "width"),
    (lambda: Dense(0, 8), "dim"),
    (lambda: Dense(8, 2.5), "width"),
    (lambda: Dense(8, 8, seed=-1), "seed"),
    (lambda: RandomHashModel(8, 16, 17), "k"),
    (lambda: RandomHashModel(8, 16, 3), "k must divide width"),
    (lambda: RandomHashModel(8, 0, 1), "width"),
    (lambda: LSHModel(8), "n_bits"),
    (lambda: LSHModel(8, n_bits=0), "n_bits"),
    (lambda: LSHModel(8, n_bits=28), "n_bits"),
    (lambda: LSHModel(8, n_bits=26, n_tables=4), "n_bits"),
    (lambda: LSHModel(8, n_bits=22, degree=2), "n_bits"),
    (lambda: LSHModel(8, n_bits=4, n_tables=0), "n_tables"),
    (lambda: LSHModel(8, n_bits=4, degree=-1), "degree"),
    (lambda: LSHModel(8, n_bits=5, hasher=HyperplaneLSH(8, 4)), "n_bits"),
    (lambda: LSHModel(8, hasher=HyperplaneLSH(7, 4)), "dim"),
    (lambda: LSHModel(8, hasher=EuclideanLSH(8, 3, 1.0)), "n_bits"),
    (lambda: LSHModel(8, n_bits=4, hasher=UniformHash(16)), "hasher.dim"),
    (lambda: LSHModel(8, n_bits=4, hasher=UniformHash(32, dim=8)), "n_buckets"),
    (lambda: LSHModel(8, hasher=UniformHash(16, dim=8)), "n_bits"),
    (lambda: LSHModel(8, n_bits=4, hasher=CrossPolytopeLSH(8, 1)), "hasher must be"),
    (lambda: LSHModel(8, n_bits=4, hasher=AffineHyperplaneLSH(8, 5)), "n_bits"),
])
def test_bad_constructor_arguments(make, name):
    with pytest.raises(ValueError, match=name):
        make()


def test_lsh_memory_limit_is_checked_before_allocating():
    with pytest.raises(ValueError, match=r"n_bits=40 is too large.*2\^27"):
        LSHModel(8, n_bits=40)  # 2^40 values would be 4 TiB
    assert LSHModel(8, n_bits=27).n_params == MAX_TABLE_VALUES  # the limit itself is fine
    

@pytest.mark.parametrize("model", [Dense(4, 8), DSM(4, 8, 2), RandomHashModel(4, 8, 2),
                                   LSHModel(4, n_bits=3)], ids=lambda m: m.name)
def test_bad_inputs(model):
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        model(np.zeros((3, 5)))
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        model(np.zeros(4))
    X = np.zeros((3, 4))
    X[1, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        model(X)
    X[1, 2] = np.inf
    with pytest.raises(ValueError, match="finite"):
        model(torch.from_numpy(X))
    with pytest.raises(ValueError, match="real"):
        model(np.array([["a"] * 4]))


# --------------------------------------------------------------------------------------------
# CUDA


@pytest.mark.cuda
@pytest.mark.parametrize("make", [lambda: Dense(8, 256, seed=1), lambda: DSM(8, 256, 16, seed=1),
                                  lambda: RandomHashModel(8, 256, 16, seed=1),
                                  lambda: LSHModel(8, n_bits=10, n_tables=2, seed=1),
                                  lambda: LSHModel(8, n_bits=4, degree=2, seed=1)],
                         ids=["dense", "dsm", "random_hash", "lsh", "lsh_poly"])
def test_cuda_forward_matches_cpu(make):
    cpu = randomise(make()).double()
    gpu = randomise(make()).double().to("cuda")
    X = cube(2000, 8, dtype=np.float64)
    torch.testing.assert_close(gpu(X).cpu(), cpu(X), rtol=1e-9, atol=1e-9)
    if isinstance(cpu, (DSM, RandomHashModel)):
        assert torch.equal(gpu.mask(X).cpu(), cpu.mask(X))
    assert gpu(torch.from_numpy(X).cuda()).device.type == "cuda"


@pytest.mark.cuda
def test_cuda_float32_dsm_agrees_with_cpu():
    cpu, gpu = randomise(DSM(8, 1024, 64)), randomise(DSM(8, 1024, 64)).to("cuda")
    X = cube(4000, 8)
    assert (gpu.mask(X).cpu() == cpu.mask(X)).float().mean() > 0.9999
    torch.testing.assert_close(gpu(X).cpu(), cpu(X), rtol=1e-3, atol=1e-3)


def test_features_getitem_takes_the_rows_of_any_index():
    """An int64 or int32 index tensor (index_select), a slice, a boolean mask and a list
    give the rows advanced indexing gives; dense features (cols None) too."""
    from routing.models._base import Features

    g = torch.Generator().manual_seed(0)
    cols = torch.randint(0, 50, (30, 4), generator=g).to(torch.uint16)
    vals = torch.randn(30, 4, generator=g)
    order = torch.randperm(30, generator=g)
    for f in (Features(cols, vals), Features(None, vals)):
        for rows in (order, order.to(torch.int32), order[:7], slice(3, 11), order < 5,
                     [2, 2, 0]):
            got = f[rows]
            assert torch.equal(got.vals, vals[rows])
            assert (got.cols is None) == (f.cols is None)
            if f.cols is not None:
                assert torch.equal(got.cols, cols[rows])
