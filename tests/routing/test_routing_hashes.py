"""Hash families: exact keys, collision rates against closed forms, bad input, determinism."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from routing._codebook import _M1, _M3, Codebook, _vector_hash
from routing.affine_hyperplane_lsh import AffineHyperplaneLSH
from routing.cross_polytope_lsh import CrossPolytopeLSH
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH
from routing.topk import topk_indices, topk_mask
from routing.uniform_hash import UniformHash


# --- closed forms (local helpers; the library versions live in routing.collision) -----------

def euclidean_collision(u, width):
    """Datar et al. 2004, Gaussian directions: one hash, points at distance u."""
    r = width / u
    return (1 - 2 * stats.norm.cdf(-r)
            - 2 / (np.sqrt(2 * np.pi) * r) * (1 - np.exp(-r**2 / 2)))


def hyperplane_collision(theta):
    """Charikar 2002: one sign bit, angle theta."""
    return 1 - theta / np.pi


def assert_rate(successes, trials, p, confidence=0.9999):
    """p lies in the exact (Clopper–Pearson) confidence interval of successes / trials."""
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence, method="exact")
    assert ci.low <= p <= ci.high, (successes / trials, p, (ci.low, ci.high))


def pair_at_angle(rng, dim, theta):
    x = rng.standard_normal(dim)
    x /= np.linalg.norm(x)
    z = rng.standard_normal(dim)
    z -= (z @ x) * x
    z /= np.linalg.norm(z)
    return np.stack([x, np.cos(theta) * x + np.sin(theta) * z])


# --- Euclidean LSH ------------------------------------------------------------------------

def test_euclidean_parameters_follow_the_documented_draws():
    h = EuclideanLSH(dim=7, n_hashes=5, width=0.3, n_tables=2, seed=11)
    rng = np.random.default_rng(11)
    np.testing.assert_array_equal(h.directions, rng.standard_normal((2, 5, 7)))
    np.testing.assert_array_equal(h.offsets, rng.uniform(0, 0.3, (2, 5)))
    big = EuclideanLSH(dim=50, n_hashes=40, width=2.0, n_tables=5, seed=1)
    assert stats.kstest(big.directions.ravel(), "norm").pvalue > 1e-3
    assert stats.kstest(big.offsets.ravel() / 2.0, "uniform").pvalue > 1e-3
    assert (big.offsets >= 0).all() and (big.offsets < 2.0).all()
    with pytest.raises(ValueError):
        big.directions[0, 0, 0] = 1.0  # read-only


def test_euclidean_hash_is_the_floor_formula():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (300, 6))
    h = EuclideanLSH(6, 4, width=0.25, n_tables=3, seed=2)
    q = (np.einsum("nd,thd->nth", X, h.directions) + h.offsets) / h.width
    clear = np.abs(q - np.round(q)) > 1e-9
    np.testing.assert_array_equal(h.hash(X)[clear], np.floor(q).astype(np.int64)[clear])
    assert h.hash(X).dtype == np.int64 and h.hash(X).shape == (300, 3, 4)


@given(seed=st.integers(0, 2**32), n=st.integers(0, 300), width=st.floats(0.1, 3.0),
       n_tables=st.integers(1, 3), calls=st.integers(1, 3))
def test_euclidean_keys_equal_iff_codes_equal(seed, n, width, n_tables, calls):
    rng = np.random.default_rng(seed)
    h = EuclideanLSH(3, 4, width, n_tables=n_tables, seed=seed)
    X = rng.uniform(-1, 1, (n, 3))
    X = np.concatenate([X, X[: n // 3]])  # repeated points
    parts = np.array_split(X, calls)
    ids = np.concatenate([h.bucket_ids(part) for part in parts])
    codes = h.hash(X)
    for t in range(n_tables):
        # ids are a bijection with the distinct code vectors, numbered by first appearance
        _, first, inverse = np.unique(codes[:, t], axis=0, return_index=True,
                                      return_inverse=True)
        order = np.argsort(first)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        np.testing.assert_array_equal(ids[:, t], rank[inverse.ravel()])
        assert h.n_buckets_seen(t) == len(first)
        np.testing.assert_array_equal(h.bucket_codes(ids[:, t], table=t), codes[:, t])


def _points_with_codes(h, codes):
    """Points whose Euclidean codes (table 0) are the given integer vectors: solve A x = w(c+½) − b."""
    A, b, w = h.directions[0], h.offsets[0], h.width
    return np.linalg.solve(A, (w * (codes + 0.5) - b).T).T


def test_euclidean_no_false_merges_for_adversarial_vectors():
    # codes differing in one coordinate by huge amounts, and vectors that collide under a
    # naive polynomial hash sum(c_i * 31**i) (e.g. (31, -1, 0, 0) and (0, 0, 0, 0))
    h = EuclideanLSH(dim=4, n_hashes=4, width=1.0, seed=5)
    base = np.array([3, -7, 0, 12])
    vectors = [base, base + [2**40, 0, 0, 0], base + [0, 0, 2**32, 0], base - [0, 2**33, 0, 0],
               [0, 0, 0, 0], [31, -1, 0, 0], [0, 31, -1, 0], [31 * 31, 0, -1, 0],
               [1, 2**32, 0, 0], [2**32 + 1, 0, 0, 0]]
    codes = np.array(vectors, dtype=np.int64)
    X = _points_with_codes(h, codes)
    np.testing.assert_array_equal(h.hash(X)[:, 0], codes)  # the construction worked
    ids = h.bucket_ids(X)[:, 0]
    assert len(set(ids.tolist())) == len(vectors)
    np.testing.assert_array_equal(h.bucket_codes(ids), codes)
    np.testing.assert_array_equal(h.bucket_ids(X[::-1])[:, 0], ids[::-1])  # stable ids


def test_codebook_separates_vectors_with_equal_64_bit_mix():
    # The probe start is h = n + c0·K0 + c1·K1 (mod 2**64, then a finaliser) with odd K0, K1:
    # for any c0', c1' = c1 + (c0 − c0')·K0·K1⁻¹ gives exactly the same mix, so only the
    # full-vector comparison can tell such vectors apart. Also int64 extremes.
    mask = (1 << 64) - 1
    M1, M3 = int(_M1), int(_M3)
    K0 = M1 | 1
    K1 = ((M1 * M3 + M1) & mask) | 1

    def to_int64(u):
        u &= mask
        return u - (1 << 64) if u >= 1 << 63 else u

    inverse = pow(K1, -1, 1 << 64)
    rows = [[c0, to_int64(5 + (1 - c0) * K0 * inverse)] for c0 in range(1, 40)]
    assert rows[0] == [1, 5]
    mixes = {int(_vector_hash(np.array(r, dtype=np.int64))) for r in rows}
    assert len(mixes) == 1  # the construction really collides
    rows += [[-1, 5], [1, -5], [2**63 - 1, -(2**63)], [-(2**63), 2**63 - 1], [0, 0]]
    codes = np.array(rows, dtype=np.int64)
    book = Codebook(2)
    ids = book.ids(np.concatenate([codes, codes]))
    np.testing.assert_array_equal(ids, np.concatenate([np.arange(len(rows))] * 2))
    np.testing.assert_array_equal(book.codes(ids[: len(rows)]), codes)
    np.testing.assert_array_equal(book.ids(codes[::-1], add=False), np.arange(len(rows))[::-1])


def test_codebook_grows_and_keeps_ids():
    book = Codebook(1)
    first = book.ids(np.arange(10_000)[:, None])
    again = book.ids(np.arange(10_000)[::-1, None])
    np.testing.assert_array_equal(first, np.arange(10_000))
    np.testing.assert_array_equal(again, np.arange(10_000)[::-1])
    np.testing.assert_array_equal(book.ids(np.array([[10_000], [-1]]), add=False), [-1, -1])
    assert book.n_ids == 10_000


@pytest.mark.parametrize("u_over_w", [0.25, 0.5, 1.0, 2.0, 4.0])
def test_euclidean_single_hash_collision_rate(u_over_w):
    rng = np.random.default_rng(int(u_over_w * 100))
    width, dim = 0.7, 5
    h = EuclideanLSH(dim, n_hashes=6000, width=width, seed=3)
    v = rng.standard_normal(dim)
    # x at the origin: a·x = 0 for every direction, so the rate is right only if the random
    # offsets b_i ~ U[0, w) are there (without them it would be Φ(w/u) − 1/2)
    x = np.zeros(dim)
    X = np.stack([x, x + u_over_w * width * v / np.linalg.norm(v)])
    codes = h.hash(X)[:, 0]  # (2, 6000): one Bernoulli(p(u)) per hash
    assert_rate((codes[0] == codes[1]).sum(), codes.shape[1], euclidean_collision(u_over_w * width, width))


@pytest.mark.parametrize("u", [0.3, 1.0])
def test_euclidean_full_key_collision_rate(u):
    rng = np.random.default_rng(7)
    h = EuclideanLSH(4, n_hashes=3, width=1.0, n_tables=3000, seed=4)
    x = rng.standard_normal(4)
    v = rng.standard_normal(4)
    ids = h.bucket_ids(np.stack([x, x + u * v / np.linalg.norm(v)]))
    assert_rate((ids[0] == ids[1]).sum(), 3000, euclidean_collision(u, 1.0) ** 3)


# --- Hyperplane LSH -----------------------------------------------------------------------

def test_hyperplane_bits_and_packing():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 9))
    for n_bits in (1, 7, 8, 13, 63, 64):
        h = HyperplaneLSH(9, n_bits, n_tables=2, seed=n_bits)
        np.testing.assert_array_equal(
            h.directions, np.random.default_rng(n_bits).standard_normal((2, n_bits, 9)))
        proj = np.einsum("nd,tbd->ntb", X, h.directions)
        bits = h.hash(X)
        assert bits.dtype == np.uint8 and bits.shape == (500, 2, n_bits)
        clear = np.abs(proj) > 1e-9
        np.testing.assert_array_equal(bits[clear], (proj >= 0)[clear])
        keys = h.bucket_ids(X).view(np.uint64)
        packed = (bits.astype(np.uint64) << np.arange(n_bits, dtype=np.uint64)).sum(axis=2)
        np.testing.assert_array_equal(keys, packed)
    assert (HyperplaneLSH(9, 64, seed=1).bucket_ids(X) < 0).any()  # bit 63 -> negative int64


def test_hyperplane_zero_projection_counts_as_positive():
    h = HyperplaneLSH(3, 5, seed=0)
    assert h.bucket_ids(np.zeros((2, 3))).tolist() == [[31], [31]]


@pytest.mark.parametrize("theta", [0.2, np.pi / 4, np.pi / 2, 2.5])
def test_hyperplane_bit_collision_rate(theta):
    rng = np.random.default_rng(int(theta * 1000))
    h = HyperplaneLSH(8, n_bits=64, n_tables=100, seed=5)
    bits = h.hash(pair_at_angle(rng, 8, theta))  # (2, 100, 64): 6400 Bernoulli(1 - θ/π)
    assert_rate((bits[0] == bits[1]).sum(), bits[0].size, hyperplane_collision(theta))


def test_hyperplane_full_key_collision_rate():
    rng = np.random.default_rng(1)
    h = HyperplaneLSH(6, n_bits=4, n_tables=4000, seed=2)
    ids = h.bucket_ids(pair_at_angle(rng, 6, np.pi / 5))
    assert_rate((ids[0] == ids[1]).sum(), 4000, hyperplane_collision(np.pi / 5) ** 4)


# --- Cross-polytope LSH -------------------------------------------------------------------

def _cross_polytope_value(Y):
    best = np.argmax(np.abs(Y), axis=-1)
    negative = np.take_along_axis(Y, best[..., None], -1)[..., 0] < 0
    return 2 * best + negative


def _haar_collision(size, theta, n, rng):
    """Monte Carlo collision probability of the cross-polytope hash under a uniformly random
    rotation of R^size for two unit vectors at angle theta: (Rx, Ry) ~ (u, cos θ u + sin θ v)."""
    u = rng.standard_normal((n, size))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    w = rng.standard_normal((n, size))
    w -= (w * u).sum(axis=1, keepdims=True) * u
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    y = np.cos(theta) * u + np.sin(theta) * w
    hits = (_cross_polytope_value(u) == _cross_polytope_value(y)).sum()
    return hits / n, np.sqrt(hits * (n - hits) / n) / n


@pytest.mark.parametrize("theta", [np.pi / 8, np.pi / 3, np.pi / 2])
def test_cross_polytope_collision_rate_on_random_pairs_is_the_exact_family_rate(theta):
    # H D3 H D2 H D1 / size**1.5 is orthogonal, so for uniformly random pairs at angle θ the
    # collision probability equals that of a uniformly random rotation (no closed form for the
    # cross-polytope; the reference is a 400k-sample Monte Carlo estimate, error ≈ 1e-3).
    rng = np.random.default_rng(int(theta * 100))
    size, n = 16, 20_000
    h = CrossPolytopeLSH(size, n_rotations=1, seed=9)
    pairs = np.stack([pair_at_angle(rng, size, theta) for _ in range(n)])  # (n, 2, size)
    values = h.hash(pairs.reshape(2 * n, size)).reshape(n, 2)
    p, se = _haar_collision(size, theta, 400_000, rng)
    hits = (values[:, 0] == values[:, 1]).sum()
    ci = stats.binomtest(int(hits), n).proportion_ci(0.9999, method="exact")
    assert ci.low - 4 * se <= p <= ci.high + 4 * se, (hits / n, p)


@pytest.mark.parametrize("theta", [np.pi / 8, np.pi / 3])
def test_cross_polytope_pseudo_random_rotation_mixes_structured_pairs(theta):
    # For a fixed pair the fast rotation is only close to a uniform rotation: x = e_0 and
    # y = cos θ e_0 + sin θ e_1 (which an identity or single-round rotation would hash
    # terribly) must collide at the uniform-rotation rate within 0.03.
    size = 64
    X = np.zeros((2, size))
    X[0, 0] = 1.0
    X[1, 0], X[1, 1] = np.cos(theta), np.sin(theta)
    h = CrossPolytopeLSH(size, n_rotations=1, n_tables=6000, seed=3)
    values = h.hash(X)[:, :, 0]
    p, _ = _haar_collision(size, theta, 200_000, np.random.default_rng(0))
    assert abs((values[0] == values[1]).mean() - p) < 0.03


def test_cross_polytope_invariants_and_packing():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 10))
    h = CrossPolytopeLSH(10, n_rotations=3, n_tables=2, seed=4)
    assert h.padded_dim == 16 and h.bits_per_hash == 5 and h.max_rotations(10) == 12
    values = h.hash(X)
    assert values.shape == (200, 2, 3) and ((values >= 0) & (values < 32)).all()
    np.testing.assert_array_equal(h.hash(2.5 * X), values)  # positive scaling
    assert (h.hash(-X) != values).all()  # antipodes never collide
    np.testing.assert_array_equal(h.hash(-X) // 2, values // 2)  # same axis, other sign
    keys = h.bucket_ids(X)
    np.testing.assert_array_equal(keys, values[:, :, 0] + (values[:, :, 1] << 5) + (values[:, :, 2] << 10))
    signs = np.random.default_rng(4).integers(0, 2, (2, 3, 3, 16)) * 2 - 1
    np.testing.assert_array_equal(h.signs, signs)
    full = CrossPolytopeLSH(64, n_rotations=9, seed=1)  # 9 * 7 = 63 bits
    assert (full.bucket_ids(rng.standard_normal((300, 64))) >= 0).all()


# --- Uniform hash -------------------------------------------------------------------------

def test_uniform_hash_collision_rate_is_one_over_n_buckets():
    rng = np.random.default_rng(0)
    h = UniformHash(10, seed=3)
    X = rng.standard_normal((40_000, 3))
    ids = h.bucket_ids(X)[:, 0]
    assert_rate((ids[0::2] == ids[1::2]).sum(), 20_000, 0.1)
    counts = np.bincount(ids, minlength=10)
    assert stats.chisquare(counts).pvalue > 1e-4
    near = X + 1e-12  # geometry does not matter: tiny moves are new, independent inputs
    assert_rate((h.bucket_ids(near)[:, 0] == ids).sum(), 40_000, 0.1)


def test_uniform_hash_is_a_function_of_the_values():
    X = np.array([[0.0, 1.5], [-0.0, 1.5], [0.0, 1.5]])
    h = UniformHash(2**40, seed=1)
    ids = h.bucket_ids(X)
    assert ids.shape == (3, 1) and ids.dtype == np.int64 and h.n_tables == 1
    assert ids[0, 0] == ids[1, 0] == ids[2, 0]  # -0.0 == 0.0
    np.testing.assert_array_equal(h.bucket_ids(X.astype(np.float32)), ids)  # exact in float32
    assert UniformHash(2**40, seed=2).bucket_ids(X)[0, 0] != ids[0, 0]
    assert UniformHash(2**40, seed=1).bucket_ids(X[:, :1])[0, 0] != ids[0, 0]
    assert h.bucket_ids(np.ones((4, 7))).shape == (4, 1)  # any number of columns


# --- Top-K --------------------------------------------------------------------------------

def test_topk_exactly_k_winners_with_ties_by_lowest_index():
    scores = np.array([[1.0, 3.0, 3.0, 3.0, 0.0],
                       [2.0, 2.0, 2.0, 2.0, 2.0],
                       [-np.inf, 5.0, np.inf, 5.0, -1.0]])
    np.testing.assert_array_equal(topk_indices(scores, 2), [[1, 2], [0, 1], [2, 1]])
    mask = topk_mask(scores, 3)
    np.testing.assert_array_equal(mask, [[0, 1, 1, 1, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0]])
    assert (topk_mask(scores, 5).all()) and topk_mask(scores, 1).sum() == 3
    assert topk_mask(np.arange(6).reshape(2, 3), 1).tolist() == [[0, 0, 1], [0, 0, 1]]


@pytest.mark.parametrize("k", [0, 6, -1, 2.0, True])
def test_topk_rejects_k_outside_range(k):
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 5\]"):
        topk_mask(np.zeros((2, 5)), k)


def test_topk_rejects_bad_scores():
    with pytest.raises(ValueError, match="NaN"):
        topk_indices(np.array([[0.0, np.nan]]), 1)
    with pytest.raises(ValueError, match="shape"):
        topk_mask(np.zeros(4), 1)
    with pytest.raises(ValueError, match="real-valued"):
        topk_mask(np.array([["a", "b"]]), 1)


# --- bad input, shared by all families ------------------------------------------------------

HASHERS = {
    "euclidean": lambda: EuclideanLSH(4, 3, 0.5, n_tables=2, seed=1),
    "hyperplane": lambda: HyperplaneLSH(4, 10, n_tables=2, seed=1),
    "affine": lambda: AffineHyperplaneLSH(4, 10, n_tables=2, seed=1),
    "cross_polytope": lambda: CrossPolytopeLSH(4, 2, n_tables=2, seed=1),
    "uniform": lambda: UniformHash(17, seed=1, dim=4),
}


@pytest.mark.parametrize("name", HASHERS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_input_never_lands_in_a_bucket(name, bad, dtype):
    h = HASHERS[name]()
    X = np.random.default_rng(0).standard_normal((50_001, 4)).astype(dtype)
    X[40_000, 2] = bad
    with pytest.raises(ValueError, match="X must be finite; it has 1 NaN or infinite"):
        h.bucket_ids(X)
    if hasattr(h, "hash"):
        with pytest.raises(ValueError, match="finite"):
            h.hash(X)


@pytest.mark.parametrize("name", HASHERS)
@pytest.mark.parametrize("X", [np.zeros((3, 5)), np.zeros((3, 3)), np.zeros(4), np.zeros((2, 2, 4)),
                               np.array([["a"] * 4]), np.zeros((3, 4), complex)])
def test_wrong_shape_or_dtype_is_rejected(name, X):
    with pytest.raises(ValueError, match="X must"):
        HASHERS[name]().bucket_ids(X)


@pytest.mark.parametrize("name", HASHERS)
def test_empty_and_integer_input(name):
    h = HASHERS[name]()
    assert h.bucket_ids(np.zeros((0, 4))).shape == (0, h.n_tables)
    X = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(h.bucket_ids(X), HASHERS[name]().bucket_ids(X.astype(float)))


def test_overflowing_input_is_rejected():
    huge = np.full((2, 4), 1e38, np.float32)
    with pytest.raises(ValueError, match="X is too large: a projection"):
        HyperplaneLSH(4, 10, seed=1).bucket_ids(huge)
    np.testing.assert_array_equal(  # the same points in float64 are fine
        HyperplaneLSH(4, 10, seed=1).bucket_ids(huge.astype(np.float64)).shape, (2, 1))
    with pytest.raises(ValueError, match="X is too large: the rotated vector"):
        CrossPolytopeLSH(4, 2, seed=1).bucket_ids(huge)
    h = EuclideanLSH(4, 3, width=1e-300, seed=1)
    with pytest.raises(ValueError, match=r"exceeds 2\*\*62"):
        h.bucket_ids(np.ones((2, 4)))


def test_failed_call_leaves_the_codebook_unchanged():
    h = EuclideanLSH(2, 3, 0.1, seed=0)
    X = np.random.default_rng(0).uniform(-1, 1, (40_000, 2))
    h.bucket_ids(X[:100])
    seen = h.n_buckets_seen()
    X[-1, 0] = np.nan  # in the third chunk: the first two were already inserted
    with pytest.raises(ValueError):
        h.bucket_ids(X)
    assert h.n_buckets_seen() == seen
    np.testing.assert_array_equal(h.bucket_ids(X[:100], add=False), h.bucket_ids(X[:100]))
    assert (h.bucket_ids(X[:-1], add=False) == -1).any() and h.n_buckets_seen() == seen


@pytest.mark.parametrize("kwargs, match", [
    (dict(dim=0, n_hashes=2, width=1.0), r"dim must be an integer >= 1"),
    (dict(dim=2, n_hashes=0, width=1.0), r"n_hashes must be an integer >= 1"),
    (dict(dim=2, n_hashes=2, width=0.0), r"width must be a finite real number in \(0, inf\]"),
    (dict(dim=2, n_hashes=2, width=-1.0), r"width"),
    (dict(dim=2, n_hashes=2, width=np.nan), r"width"),
    (dict(dim=2, n_hashes=2, width=np.inf), r"width"),
    (dict(dim=2, n_hashes=2, width=1.0, n_tables=0), r"n_tables"),
    (dict(dim=2, n_hashes=2, width=1.0, seed=-1), r"seed"),
    (dict(dim=2.5, n_hashes=2, width=1.0), r"dim"),
])
def test_euclidean_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EuclideanLSH(**kwargs)


def test_affine_hyperplanes_follow_the_documented_draws_and_cut_the_cube():
    """directions: the first standard normals of the seed (HyperplaneLSH's), then points p
    uniform on [−r, r]^dim and b = −a·p; bit i of x is [a_i·x + b_i >= 0], packed
    little-endian."""
    dim, n_bits, n_tables, radius = 3, 7, 2, 0.5
    h = AffineHyperplaneLSH(dim, n_bits, n_tables, radius=radius, seed=11)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((n_tables, n_bits, dim))
    p = rng.uniform(-radius, radius, (n_tables, n_bits, dim))
    np.testing.assert_array_equal(h.directions, a)
    np.testing.assert_array_equal(h.directions, HyperplaneLSH(dim, n_bits, n_tables,
                                                              seed=11).directions)
    np.testing.assert_allclose(h.offsets, -(a * p).sum(axis=2), rtol=1e-15)
    X = np.random.default_rng(1).uniform(-1, 1, (3000, dim))
    bits = np.einsum("nd,tbd->ntb", X, a) + h.offsets[None] >= 0
    np.testing.assert_array_equal(h.hash(X), bits.astype(np.uint8))
    np.testing.assert_array_equal(h.bucket_ids(X), (bits << np.arange(n_bits)).sum(axis=2))
    # each hyperplane passes through the cube: it splits the data (a central one would too,
    # but the point x = p is on it: a·p + b = 0)
    assert (bits.mean(axis=0) > 0.01).all() and (bits.mean(axis=0) < 0.99).all()
    np.testing.assert_allclose(np.einsum("tbd,tbd->tb", a, p) + h.offsets, 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="read-only"):
        h.offsets[0, 0] = 1.0


@pytest.mark.parametrize("kwargs, match", [
    (dict(dim=0, n_bits=2), r"dim"), (dict(dim=2, n_bits=0), r"n_bits"),
    (dict(dim=2, n_bits=65), r"n_bits"), (dict(dim=2, n_bits=2, n_tables=0), r"n_tables"),
    (dict(dim=2, n_bits=2, radius=0.0), r"radius"), (dict(dim=2, n_bits=2, radius=np.inf),
                                                     r"radius"),
    (dict(dim=2, n_bits=2, seed=-1), r"seed"),
])
def test_affine_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AffineHyperplaneLSH(**kwargs)


@pytest.mark.parametrize("n_bits", [0, 65, -3, 8.0])
def test_hyperplane_rejects_n_bits_outside_1_to_64(n_bits):
    with pytest.raises(ValueError, match=r"n_bits must be an integer in \[1, 64\]"):
        HyperplaneLSH(3, n_bits)


def test_cross_polytope_rejects_too_many_rotations():
    with pytest.raises(ValueError, match=r"n_rotations must be an integer in \[1, 9\], got 10"):
        CrossPolytopeLSH(64, n_rotations=10)
    with pytest.raises(ValueError, match=r"n_rotations"):
        CrossPolytopeLSH(3, n_rotations=0)


def test_uniform_and_codes_reject_bad_parameters():
    with pytest.raises(ValueError, match=r"n_buckets must be an integer in \[1, "):
        UniformHash(0)
    with pytest.raises(ValueError, match="dim"):
        UniformHash(3, dim=0)
    h = EuclideanLSH(2, 2, 1.0)
    ids = h.bucket_ids(np.zeros((1, 2)))
    with pytest.raises(ValueError, match=r"keys must be bucket ids of table 0 in \[0, 0\]"):
        h.bucket_codes(ids[:, 0] + 1)
    with pytest.raises(ValueError, match="table"):
        h.bucket_codes(ids[:, 0], table=1)
    with pytest.raises(ValueError, match="keys must be a 1-D integer array"):
        h.bucket_codes(np.array([0.5]))


# --- determinism ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", HASHERS)
def test_same_seed_same_buckets_other_seed_other_buckets(name):
    X = np.random.default_rng(0).standard_normal((400, 4))
    a, b = HASHERS[name]().bucket_ids(X), HASHERS[name]().bucket_ids(X)
    np.testing.assert_array_equal(a, b)
    other = {"euclidean": EuclideanLSH(4, 3, 0.5, n_tables=2, seed=2),
             "hyperplane": HyperplaneLSH(4, 10, n_tables=2, seed=2),
             "affine": AffineHyperplaneLSH(4, 10, n_tables=2, seed=2),
             "cross_polytope": CrossPolytopeLSH(4, 2, n_tables=2, seed=2),
             "uniform": UniformHash(17, seed=2, dim=4)}[name]
    if name == "euclidean":  # ids are first-appearance ranks: compare the partitions
        assert not np.array_equal(HASHERS[name]().hash(X), other.hash(X))
    else:
        assert not np.array_equal(a, other.bucket_ids(X))


@pytest.mark.parametrize("name", ["euclidean", "hyperplane", "affine", "cross_polytope"])
def test_float32_agrees_with_float64_away_from_boundaries(name):
    X = np.random.default_rng(3).uniform(-1, 1, (2000, 4)).astype(np.float32)
    h32, h64 = HASHERS[name](), HASHERS[name]()
    a, b = h32.hash(X), h64.hash(X.astype(np.float64))
    assert a.shape == b.shape
    assert (a != b).mean() < 1e-3  # only points within float32 rounding of a boundary


# --- flags ----------------------------------------------------------------------------------
_X2 = np.random.default_rng(0).uniform(-1, 1, (40, 2))


def test_string_add_flag_is_refused_not_read_by_truthiness():
    with pytest.raises(ValueError, match="must be True or False, got 'False'"):
        EuclideanLSH(2, 2, 1.0).bucket_ids(_X2, add="False")
    EuclideanLSH(2, 2, 1.0).bucket_ids(_X2, add=np.bool_(False))  # numpy bools are bools


def test_bucket_ids_add_false_leaves_the_codebook_unchanged():
    hasher = EuclideanLSH(2, 2, 0.1)
    with pytest.raises(ValueError, match="add"):
        hasher.bucket_ids(_X2, add="False")
    assert hasher.n_buckets_seen() == 0
