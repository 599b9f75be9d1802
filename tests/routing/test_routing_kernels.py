"""Numba kernels of ``routing`` against their short numpy / Python reference implementations."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numba import njit
from scipy.linalg import hadamard

from routing._codebook import Codebook, CodebookReference
from routing._floor_kernel import floor_codes, floor_codes_reference
from routing._hadamard import (TIE_TOL, cross_polytope_codes, cross_polytope_reference, fwht,
                               rotate_reference)
from routing._mixer import row_buckets, row_buckets_reference, seed_key
from routing._projection import (BLOCK, CANDIDATE_GROUPS, LANES, compress_in_range,
                                 count_in_range, pack_groups, project_candidates,
                                 project_reference)
from routing._sign_kernel import packed_signs, packed_signs_reference
from routing.topk import topk_indices, topk_indices_reference, topk_mask

DTYPES = st.sampled_from([np.float64, np.float32])
# relative rounding margin inside which kernel and reference may legitimately disagree
MARGIN = {np.float64: 1e-9, np.float32: 1e-4}


def _points(seed, n, dim, dtype, scale=1.0):
    return (scale * np.random.default_rng(seed).standard_normal((n, dim))).astype(dtype)


@given(seed=st.integers(0, 2**32), n=st.integers(1, 40), dim=st.integers(1, 20),
       n_tables=st.integers(1, 3), n_bits=st.integers(1, 64), dtype=DTYPES)
def test_packed_signs_matches_reference(seed, n, dim, n_tables, n_bits, dtype):
    rng = np.random.default_rng(seed)
    X = _points(seed, n, dim, dtype)
    D = rng.standard_normal((n_tables, n_bits, dim))
    out = np.empty((n, n_tables), np.int64)
    assert packed_signs(X, pack_groups(D, dtype), n_tables, n_bits, out)
    ref = packed_signs_reference(X, D)
    proj = project_reference(X.astype(np.float64), D)  # (n, T, B)
    scale = np.abs(X).sum(axis=1)[:, None, None] * np.abs(D).max() + 1e-300
    clear = np.abs(proj) > MARGIN[dtype] * scale  # bits far from their hyperplane
    shifts = np.arange(n_bits, dtype=np.uint64)
    bits = (out.view(np.uint64)[:, :, None] >> shifts) & np.uint64(1)
    ref_bits = (ref.view(np.uint64)[:, :, None] >> shifts) & np.uint64(1)
    np.testing.assert_array_equal(bits[clear], ref_bits[clear])
    if n_bits < 64:
        assert (out >= 0).all() and (out < 2**n_bits).all()


@given(seed=st.integers(0, 2**32), n=st.integers(1, 40), dim=st.integers(1, 20),
       n_tables=st.integers(1, 3), n_hashes=st.integers(1, 20), dtype=DTYPES,
       width=st.floats(0.05, 20.0))
def test_floor_codes_match_reference(seed, n, dim, n_tables, n_hashes, dtype, width):
    rng = np.random.default_rng(seed)
    X = _points(seed, n, dim, dtype, scale=3.0)
    D = rng.standard_normal((n_tables, n_hashes, dim))
    b = rng.uniform(0, width, (n_tables, n_hashes))
    out = np.empty((n, n_tables, n_hashes), np.int64)
    assert floor_codes(X, pack_groups(D, dtype), b, width, out)
    ref = floor_codes_reference(X, D, b, width)
    q = (project_reference(X.astype(np.float64), D) + b) / width
    scale = (np.abs(X).sum(axis=1)[:, None, None] * np.abs(D).max() + width) / width
    clear = np.abs(q - np.round(q)) > MARGIN[dtype] * scale
    np.testing.assert_array_equal(out[clear], ref[clear])
    assert np.abs(out - ref).max(initial=0) <= 1  # near a boundary: off by one at most


def test_floor_codes_report_overflow_and_nan():
    D = np.ones((1, 1, 2))
    out = np.empty((1, 1, 1), np.int64)
    big = np.array([[1e300, 0.0]])
    assert not floor_codes(big, pack_groups(D, np.float64), np.zeros((1, 1)), 1.0, out)
    nan = np.array([[np.nan, 0.0]])
    assert not floor_codes(nan, pack_groups(D, np.float64), np.zeros((1, 1)), 1.0, out)


@given(log_size=st.integers(0, 8), seed=st.integers(0, 2**32))
def test_fwht_is_sylvester_hadamard(log_size, seed):
    v = np.random.default_rng(seed).standard_normal(2**log_size)
    w = v.copy()
    fwht(w)
    np.testing.assert_allclose(w, hadamard(2**log_size) @ v, rtol=1e-12, atol=1e-9)


@given(seed=st.integers(0, 2**32), n=st.integers(1, 30), dim=st.integers(1, 40),
       n_tables=st.integers(1, 2), n_rot=st.integers(1, 3), dtype=DTYPES)
def test_cross_polytope_codes_match_reference(seed, n, dim, n_tables, n_rot, dtype):
    rng = np.random.default_rng(seed)
    size = 1 << (dim - 1).bit_length()
    X = _points(seed, n, dim, dtype)
    signs = (2 * rng.integers(0, 2, (n_tables, n_rot, 3, size)) - 1).astype(dtype)
    out = np.empty((n, n_tables, n_rot), np.int64)
    assert cross_polytope_codes(X, signs, TIE_TOL[np.dtype(dtype)], out)
    ref = cross_polytope_reference(X, signs)
    for t in range(n_tables):
        for r in range(n_rot):
            y = np.abs(rotate_reference(X.astype(np.float64), signs[t, r]))
            threshold = (1 - TIE_TOL[np.dtype(dtype)]) * y.max(axis=1, keepdims=True)
            # rows where no |y_j| is within rounding of the tie threshold (a worst-case bound:
            # structural exact ties, 1e-10 or 1e-4 below the top, stay in the comparison)
            eps = np.finfo(dtype).eps
            scale = 8 * eps * (np.log2(size) + 1) * size**1.5 * np.abs(X).sum(axis=1, keepdims=True)
            clear = (np.abs(y - threshold) > scale).all(axis=1)
            np.testing.assert_array_equal(out[clear, t, r], ref[clear, t, r])
    assert ((out >= 0) & (out < 2 * size)).all()


@given(seed=st.integers(0, 2**40), n=st.integers(1, 30), dim=st.integers(1, 6),
       n_buckets=st.integers(1, 2**62), dtype=DTYPES)
def test_row_buckets_match_reference(seed, n, dim, n_buckets, dtype):
    X = _points(seed, n, dim, dtype)
    X[0, 0] = -0.0
    out = np.empty(n, np.int64)
    assert row_buckets(X, np.uint64(seed_key(seed)), n_buckets, out)
    np.testing.assert_array_equal(out, row_buckets_reference(X, seed, n_buckets))


def test_row_buckets_flag_non_finite():
    out = np.empty(2, np.int64)
    for bad in (np.nan, np.inf, -np.inf):
        X = np.array([[0.5, 1.0], [bad, 2.0]])
        assert not row_buckets(X, np.uint64(seed_key(0)), 7, out)


_vectors = st.lists(st.lists(st.integers(-3, 3), min_size=3, max_size=3), min_size=0,
                    max_size=60)


@given(batches=st.lists(st.tuples(_vectors, st.booleans()), min_size=1, max_size=4))
def test_codebook_matches_dict_reference(batches):
    book, ref = Codebook(3), CodebookReference(3)
    for rows, add in batches:
        codes = np.array(rows, dtype=np.int64).reshape(-1, 3)
        np.testing.assert_array_equal(book.ids(codes, add=add), ref.ids(codes, add=add))
        assert book.n_ids == ref.n_ids


@given(seed=st.integers(0, 2**32), n=st.integers(0, 30), n_units=st.integers(1, 12),
       data=st.data(), dtype=DTYPES)
def test_topk_matches_stable_argsort(seed, n, n_units, data, dtype):
    k = data.draw(st.integers(1, n_units))
    rng = np.random.default_rng(seed)
    # few distinct values so that ties are common; some infinities and signed zeros
    scores = rng.choice([-np.inf, -1.0, -0.0, 0.0, 0.5, 2.0, np.inf], size=(n, n_units))
    scores = scores.astype(dtype)
    ref = topk_indices_reference(scores, k)
    np.testing.assert_array_equal(topk_indices(scores, k), ref)
    expected = np.zeros((n, n_units), bool)
    np.put_along_axis(expected, ref, True, axis=1)
    np.testing.assert_array_equal(topk_mask(scores, k), expected)


@pytest.mark.parametrize("row", range(11))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_report_a_non_finite_point_anywhere_in_a_block(row, dtype):
    """11 points: a full block of 8 and a short one; 20 directions: a full group and a padded one."""
    X = _points(row, 11, 3, dtype)
    D = np.random.default_rng(row).standard_normal((2, 20, 3))
    groups = pack_groups(D, dtype)
    signs = np.empty((11, 2), np.int64)
    codes = np.empty((11, 2, 20), np.int64)
    b = np.zeros((2, 20))
    assert packed_signs(X, groups, 2, 20, signs) and floor_codes(X, groups, b, 1.0, codes)
    X[row, 1] = np.nan
    assert not packed_signs(X, groups, 2, 20, signs)
    assert not floor_codes(X, groups, b, 1.0, codes)


@njit
def _scan(v, n, lo, hi, index, mode):
    """Both range scans on v[:n]; mode 0: index array, 1: integer offset, 2: no upper bound,
    3: values only (out_j None: the index array is left untouched)."""
    out_v = np.full(n + LANES, -7.0, v.dtype)  # room for whole-vector stores
    out_j = np.full(n + LANES, -7, np.int32)
    if mode == 0:
        kept = compress_in_range(v, n, lo, hi, index, out_v, out_j)
        counted = count_in_range(v, n, lo, hi)
    elif mode == 1:
        kept = compress_in_range(v, n, lo, hi, 5, out_v, out_j)
        counted = count_in_range(v, n, lo, hi)
    elif mode == 2:
        kept = compress_in_range(v, n, lo, None, 5, out_v, out_j)
        counted = count_in_range(v, n, lo, None)
    else:
        kept = compress_in_range(v, n, lo, hi, index, out_v, None)
        counted = count_in_range(v, n, lo, hi)
    return out_v[:kept], out_j[:kept], counted


def check_range_scans(seed, n, dtype):
    """compress_in_range / count_in_range against numpy on v[:n], all four modes."""
    rng = np.random.default_rng(seed)
    padded = -(-n // LANES) * LANES + LANES
    v = rng.integers(-3, 4, padded).astype(dtype)  # many entries equal to the bounds
    v[rng.random(padded) < 0.1] = np.nan  # NaN is never kept
    v[n:] = 0.0  # read (whole vectors) but past n: never kept
    index = rng.integers(0, 2**31 - 1, padded).astype(np.int32)
    lo, hi = dtype(rng.integers(-3, 2)), dtype(rng.integers(-1, 4))
    head = v[:n]
    for mode in range(4):
        keep = (head >= lo) & ((head < hi) if mode != 2 else True)
        where = np.flatnonzero(keep)
        values, indices, counted = _scan(v, n, lo, hi, index, mode)
        np.testing.assert_array_equal(values, head[where])
        expected_indices = {0: index[where], 3: np.full(len(where), -7)}.get(mode, where + 5)
        np.testing.assert_array_equal(indices, expected_indices)
        assert counted == len(where)


@given(seed=st.integers(0, 2**32), n=st.integers(0, 70), dtype=DTYPES)
def test_range_scans_match_numpy(seed, n, dtype):
    check_range_scans(seed, n, dtype)


@njit
def _candidates(X, groups, step, thresholds, sparse):
    """project_candidates over every block and pair of groups: each row's kept values and
    indices, padded with NaN and -1; ``sparse``: its stores for few kept projections."""
    n, width = X.shape[0], groups.shape[0] * LANES
    out_v = np.full((BLOCK, width + step * LANES), -7.0, X.dtype)
    out_j = np.full((BLOCK, width + step * LANES), -7, np.int32)
    counts = np.zeros(BLOCK, np.int64)
    values = np.full((n, width), np.nan, X.dtype)
    indices = np.full((n, width), -1, np.int64)
    for first in range(0, n, BLOCK):
        counts[:] = 0
        for g in range(0, groups.shape[0], step):
            if sparse:
                project_candidates(X, first, groups, g, thresholds[first:first + BLOCK], out_v,
                                   out_j, counts, True)
            else:
                project_candidates(X, first, groups, g, thresholds[first:first + BLOCK], out_v,
                                   out_j, counts, False)
        for q in range(min(BLOCK, n - first)):
            values[first + q, :counts[q]] = out_v[q, :counts[q]]
            indices[first + q, :counts[q]] = out_j[q, :counts[q]]
    return values, indices


def check_candidates(seed, n, dim, n_dirs, dtype):
    """project_candidates keeps, per point, the affine projections c + A x >= its threshold
    with their direction indices, in direction order; zero directions pad the groups to a
    multiple of the groups per call. With -inf thresholds it keeps every projection, which
    must be exact here. Both store modes (``sparse``: 16 bytes, then the whole vector only
    when more lanes were kept) give the same rows, whatever the number kept per vector."""
    rng = np.random.default_rng(seed)
    # small integers: exact projections, many equal to the (integer) thresholds
    X = rng.integers(-2, 3, (n, dim)).astype(dtype)
    if n > 2:
        X[1, 0] = np.nan  # its projections are NaN: never kept
    directions = rng.integers(-2, 3, (n_dirs, dim)).astype(np.float64)
    offsets = rng.integers(-2, 3, n_dirs).astype(np.float64)
    groups = pack_groups(np.c_[directions, offsets][None], dtype)
    step = CANDIDATE_GROUPS[np.dtype(dtype)]  # groups per call: pad to a multiple
    groups = np.concatenate([groups, np.zeros((-len(groups) % step, *groups.shape[1:]), dtype)])
    width = len(groups) * LANES  # the padding directions are 0 (NaN on a NaN point)
    padded = np.zeros((width, dim + 1))
    padded[:n_dirs] = np.c_[directions, offsets]
    expected = X.astype(np.float64) @ padded[:, :dim].T + padded[:, dim]
    thresholds = np.zeros(-(-n // BLOCK) * BLOCK, dtype)  # one per point, the tail unused
    thresholds[:n] = rng.integers(-3, 4, n)
    for sparse in (False, True):
        values, indices = _candidates(X, groups, step, thresholds, sparse)
        for r in range(n):
            where = np.flatnonzero(expected[r] >= thresholds[r])
            assert indices[r, len(where):].max(initial=-1) == -1
            np.testing.assert_array_equal(indices[r, :len(where)], where)
            np.testing.assert_array_equal(values[r, :len(where)], expected[r, where])
    every = np.full_like(thresholds, -np.inf)
    finite = np.isfinite(expected).all(axis=1)
    for sparse in (False, True):
        values, indices = _candidates(X, groups, step, every, sparse)
        np.testing.assert_array_equal(values[finite], expected[finite])
        assert (indices[finite] == np.arange(width)).all()


@given(seed=st.integers(0, 2**32), n=st.integers(1, 30), dim=st.integers(1, 9),
       n_dirs=st.integers(1, 70), dtype=DTYPES)
def test_project_candidates_keeps_projections_reaching_the_threshold(seed, n, dim, n_dirs,
                                                                      dtype):
    check_candidates(seed, n, dim, n_dirs, dtype)


@pytest.mark.slow
def test_range_scans_without_avx512(tmp_path):
    """The portable code path (LLVM's compressing store), compiled for a generic CPU."""
    script = (
        "import numpy as np\n"
        "from tests.routing.test_routing_kernels import check_candidates, check_range_scans\n"
        "for seed in range(20):\n"
        "    for dtype in (np.float32, np.float64):\n"
        "        check_range_scans(seed, seed * 3, dtype)\n"
        "        check_candidates(seed, 1 + seed, 1 + seed % 9, 1 + 3 * seed, dtype)\n"
        "from routing._projection import _has_avx512f\n"
        "assert not _has_avx512f()\n")
    env = dict(os.environ, NUMBA_CPU_NAME="generic", NUMBA_CACHE_DIR=str(tmp_path))
    root = pathlib.Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", script], cwd=root, env=env, check=True)
