"""Every bucket of a Euclidean LSH on Γ = (k-dim subspace) ∩ [-1, 1]^dim, exactly (k ≤ 3).

Lemma 4.2 of Baykal et al. 2022 speaks about *all* buckets meeting Γ: their largest diameter
(part 1) and their number (part 2). Hashing sample points finds only the buckets of large
mass and measures only the diameter of the sampled points, both lower bounds; thin sliver
buckets — exactly the ones with large diameters — are the ones a sample misses. Here the
buckets are enumerated exactly from the hyperplane arrangement.

In subspace coordinates z (x = basis @ z) hash i is floor((g_i·z + b_i) / w) with
g_i = basis^T a_i, so the bucket boundaries are the hyperplanes g_i·z = n w − b_i (n ∈ Z), and
Γ is the polytope P = {z : |basis z|∞ ≤ 1}. Every bucket meets Γ in a convex polytope (an
intersection of slabs and P), bounded, so it has a vertex, and every vertex of such a region is
a vertex of the arrangement (the point where k linearly independent constraints — bucket
boundaries or facets of P — meet). Conversely, at a vertex where j bucket boundaries and k − j
facets meet (general position, probability 1 for Gaussian directions), the 2^j sign choices
of the j boundaries give 2^j buckets that all have interior points inside Γ near the vertex.
So: enumerate the arrangement's vertices inside P (all k-subsets of non-parallel hyperplanes),
attach each to its 2^j adjacent buckets, and each bucket's region is the convex hull of the
vertices attached to it; its diameter is the largest distance between two of them
(``routing.bucket_geometry.bucket_diameters``). Cost: O(H^k) candidate vertices for H
hyperplanes crossing Γ, hence k ≤ 3.

Reference for the tests: ``routing.bucket_geometry.bucket_region_diameter`` (linear programs
and Qhull, one bucket at a time).

Source: Baykal et al. 2022, §2.2 (Euclidean LSH) and Lemma 4.2; Datar et al. 2004.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import HalfspaceIntersection

from routing.validation import check_int, check_points, check_real
from routing.bucket_geometry import bucket_diameters

__all__ = ["LSHCells", "euclidean_lsh_cells", "hasher_cells", "difference_body_radius",
           "difference_body_vertices",
           "polytope_vertices", "TooManyCandidates", "MAX_K"]

#: Largest subspace dimension supported (the vertex enumeration is O(H^k)).
MAX_K = 3
_TOL = 1e-9
_CHUNK = 1 << 18


class TooManyCandidates(ValueError):
    """Raised when the arrangement has more k-subsets of hyperplanes than the caller allows."""


@dataclass(frozen=True)
class LSHCells:
    """The buckets of one Euclidean LSH table that meet Γ with positive k-volume.

    Attributes:
        codes: int64 (n_cells, n_hashes), each bucket's integer code vector
            (floor((a_i·x + b_i) / w) for x in the bucket), sorted lexicographically.
        diameters: float64 (n_cells,), the diameter of each bucket's region inside Γ, in the
            units of x.
        n_vertices: int64 (n_cells,), vertices attached to each bucket (≥ k + 1 for k ≥ 1).
        n_hyperplanes: bucket boundaries crossing Γ (H).
        n_candidates: k-subsets of hyperplanes solved.
        n_near_degenerate: vertices where a non-participating hash lay within 1e-9 of a
            boundary (general position is assumed; this should be 0).
    """

    codes: np.ndarray
    diameters: np.ndarray
    n_vertices: np.ndarray
    n_hyperplanes: int
    n_candidates: int
    n_near_degenerate: int

    @property
    def n_cells(self) -> int:
        """Number of buckets meeting Γ (with positive k-volume)."""
        return int(self.codes.shape[0])

    @property
    def max_diameter(self) -> float:
        """Largest bucket diameter inside Γ (0.0 when there is no bucket)."""
        return float(self.diameters.max()) if self.diameters.size else 0.0


def polytope_vertices(basis: np.ndarray) -> np.ndarray:
    """Vertices of P = {z ∈ R^k : |basis z|∞ ≤ 1} (the set Γ in subspace coordinates).

    Arguments:
        basis: float64 (dim, k) of rank k.

    Returns:
        float64 (n_vertices, k). For k = 1 the two ends of the interval.

    Raises:
        RuntimeError: if Qhull fails (numerically degenerate basis).
    """
    dim, k = basis.shape
    if k == 1:
        t = 1.0 / np.abs(basis[:, 0]).max()
        return np.array([[-t], [t]])
    halfspaces = np.vstack([np.hstack([basis, -np.ones((dim, 1))]),
                            np.hstack([-basis, -np.ones((dim, 1))])])
    try:
        return HalfspaceIntersection(halfspaces, np.zeros(k)).intersections
    except Exception as err:  # pragma: no cover - Qhull on degenerate input
        raise RuntimeError(f"Qhull failed on the subspace polytope: {err}") from err


def _solve_subsets(normals: np.ndarray, rhs: np.ndarray, family: np.ndarray, k: int):
    """Yield (subset indices (n, k), points (n, k)) for k-subsets of distinct families whose
    normals are linearly independent, in chunks."""
    H = len(rhs)
    if k == 1:
        idx = np.arange(H)[:, None]
        yield idx, (rhs / normals[:, 0])[:, None]
        return
    if k == 2:
        i, j = np.triu_indices(H, 1)
        keep = family[i] != family[j]
        i, j = i[keep], j[keep]
        for s in range(0, len(i), _CHUNK):
            a, b = i[s:s + _CHUNK], j[s:s + _CHUNK]
            n1, n2 = normals[a], normals[b]
            det = n1[:, 0] * n2[:, 1] - n1[:, 1] * n2[:, 0]
            ok = np.abs(det) > 1e-10
            a, b, n1, n2, det = a[ok], b[ok], n1[ok], n2[ok], det[ok]
            r1, r2 = rhs[a], rhs[b]
            z = np.stack([(r1 * n2[:, 1] - r2 * n1[:, 1]) / det,
                          (n1[:, 0] * r2 - n2[:, 0] * r1) / det], axis=1)
            yield np.stack([a, b], axis=1), z
        return
    # k == 3: Cramer's rule with cross products, chunked over the first index
    for a0 in range(H - 2):
        j, l = np.triu_indices(H - a0 - 1, 1)
        j, l = j + a0 + 1, l + a0 + 1
        keep = (family[j] != family[l]) & (family[j] != family[a0]) & (family[l] != family[a0])
        j, l = j[keep], l[keep]
        if not len(j):
            continue
        n1 = np.broadcast_to(normals[a0], (len(j), 3))
        n2, n3 = normals[j], normals[l]
        c23, c31, c12 = np.cross(n2, n3), np.cross(n3, n1), np.cross(n1, n2)
        det = np.einsum("ij,ij->i", n1, c23)
        ok = np.abs(det) > 1e-10
        z = (rhs[a0] * c23[ok] + rhs[j[ok], None] * c31[ok] + rhs[l[ok], None] * c12[ok]) \
            / det[ok, None]
        yield np.stack([np.full(ok.sum(), a0), j[ok], l[ok]], axis=1), z


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True)``, about 10x faster.

    Rows are grouped by a 64-bit mix of their entries, then every row is compared with its
    group's representative; a collision (two different rows with the same mix) falls back to
    ``np.unique``, so the result is always exact. Unique rows come out in lexicographic order.
    """
    mult = np.random.default_rng(12345).integers(1, 2**62, rows.shape[1]) * 2 + 1
    with np.errstate(over="ignore"):
        mix = (rows.astype(np.uint64) * mult.astype(np.uint64)).sum(axis=1, dtype=np.uint64)
        mix ^= mix >> np.uint64(29)
    _, first, inverse = np.unique(mix, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not (rows == rows[first][inverse]).all():  # pragma: no cover - 64-bit collision
        uniq, inv = np.unique(rows, axis=0, return_inverse=True)
        return uniq, inv.reshape(-1)
    reps = rows[first]
    order = np.lexsort(reps.T[::-1])  # lexicographic, first column most significant
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return reps[order], rank[inverse]


def euclidean_lsh_cells(directions, offsets, width: float, basis,
                        max_candidates: int | None = None) -> LSHCells:
    """All buckets of one Euclidean LSH table that meet Γ = span(basis) ∩ [-1, 1]^dim.

    Arguments:
        directions: float (n_hashes, dim), the a_i.
        offsets: float (n_hashes,), the b_i.
        width: bucket width w > 0 (same units as x).
        basis: float (dim, k) with orthonormal columns, 1 ≤ k ≤ 3.
        max_candidates: refuse (``TooManyCandidates``) arrangements with more k-subsets of
            hyperplanes than this (the work is proportional to it); None: no limit.

    Returns:
        ``LSHCells`` (method in the module docstring).

    Raises:
        ValueError: inconsistent shapes, non-finite values, width ≤ 0, k outside 1..3, or a
            basis without orthonormal columns.
        TooManyCandidates (a ValueError): more candidate k-subsets than ``max_candidates``.

    Source: Baykal et al. 2022, Lemma 4.2 (the buckets meeting Γ).
    """
    A = check_points(directions, None, name="directions")
    m, dim = A.shape
    b = np.asarray(offsets, dtype=np.float64)
    if b.shape != (m,) or not np.isfinite(b).all():
        raise ValueError(f"offsets must be a finite array of shape ({m},), got {b.shape}")
    w = check_real(width, "width", 0.0, None, low_open=True)
    basis = np.asarray(basis, dtype=np.float64)
    if basis.ndim != 2 or basis.shape[0] != dim:
        raise ValueError(f"basis must have shape (dim={dim}, k), got {basis.shape}")
    k = check_int(basis.shape[1], "k = basis.shape[1]", 1, MAX_K)
    basis = check_points(basis, k, name="basis")
    if not np.allclose(basis.T @ basis, np.eye(k), atol=1e-8):
        raise ValueError("basis must have orthonormal columns (basis.T @ basis == I_k within 1e-8)")

    G = A @ basis  # (m, k) projected directions: hash i is floor((G_i z + b_i) / w)
    Vp = polytope_vertices(basis)
    # facets of P: constraint rows ±basis_j that some vertex of P touches
    rows = np.vstack([basis, -basis])
    touch = (Vp @ rows.T).max(axis=0) >= 1.0 - 1e-7
    facet_rows = rows[touch]
    facet_family = -1 - (np.flatnonzero(touch) % dim)  # ±basis_j are parallel: same family
    # bucket boundaries crossing P
    t_range = (Vp @ G.T + b) / w  # (n_vertices, m)
    t_lo, t_hi = np.ceil(t_range.min(axis=0)), np.floor(t_range.max(axis=0))
    hyper_family, hyper_level = [], []
    for i in range(m):
        levels = np.arange(t_lo[i], t_hi[i] + 1)
        hyper_family.append(np.full(len(levels), i))
        hyper_level.append(levels)
    hyper_family = np.concatenate(hyper_family).astype(np.int64) if m else np.zeros(0, np.int64)
    hyper_level = np.concatenate(hyper_level) if m else np.zeros(0)
    H = len(hyper_family)
    normals = np.vstack([G[hyper_family], facet_rows])
    rhs = np.concatenate([hyper_level * w - b[hyper_family], np.ones(len(facet_rows))])
    family = np.concatenate([hyper_family, facet_family])
    scale = np.linalg.norm(normals, axis=1)
    live = scale > 1e-14
    normals, rhs, family = normals[live] / scale[live, None], rhs[live] / scale[live], family[live]
    is_hash = family >= 0
    level = np.concatenate([hyper_level, np.zeros(len(facet_rows))])[live]
    n_subsets = math.comb(len(rhs), k)
    if max_candidates is not None and n_subsets > max_candidates:
        raise TooManyCandidates(
            f"the arrangement has {len(rhs)} hyperplanes, {n_subsets} {k}-subsets; "
            f"max_candidates={max_candidates}")

    vertex_z, vertex_codes, n_candidates, n_degenerate = [], [], 0, 0
    for subset, z in _solve_subsets(normals, rhs, family, k):
        n_candidates += len(subset)
        inside = np.abs(z @ basis.T).max(axis=1) <= 1.0 + _TOL
        subset, z = subset[inside], z[inside]
        if not len(z):
            continue
        t = (z @ G.T + b) / w  # (n, m)
        codes = np.floor(t).astype(np.int64)
        hash_member = is_hash[subset]  # (n, k): which of the k constraints are boundaries
        member_family = family[subset]
        tight = np.zeros(codes.shape, bool)
        rows_, cols_ = np.nonzero(hash_member)
        codes[rows_, member_family[rows_, cols_]] = level[subset[rows_, cols_]].astype(np.int64)
        tight[rows_, member_family[rows_, cols_]] = True
        frac = np.abs(t - np.round(t))
        n_degenerate += int(np.count_nonzero((frac < _TOL) & ~tight))
        # 2^j adjacent buckets: each tight boundary at level n is the lower side of the bucket
        # with code n and the upper side of the bucket with code n − 1
        n_tight = hash_member.sum(axis=1)
        for j in range(k + 1):
            sel = np.flatnonzero(n_tight == j)
            if not len(sel):
                continue
            base = codes[sel]
            cols = member_family[sel][hash_member[sel]].reshape(len(sel), j)
            for signs in itertools.product((0, 1), repeat=j):
                variant = base.copy()
                for c, s in enumerate(signs):
                    variant[np.arange(len(sel)), cols[:, c]] -= s
                vertex_codes.append(variant)
                vertex_z.append(z[sel])
    if not vertex_codes:  # pragma: no cover - P always has vertices
        return LSHCells(np.zeros((0, m), np.int64), np.zeros(0), np.zeros(0, np.int64), H, 0, 0)
    all_codes = np.concatenate(vertex_codes)
    all_z = np.concatenate(vertex_z)
    cells, cell_id = _unique_rows(all_codes)
    frame = bucket_diameters(all_z, cell_id.reshape(-1).astype(np.int64))
    diam = np.zeros(len(cells))
    count = np.zeros(len(cells), np.int64)
    diam[frame["key"].to_numpy()] = frame["diameter"].to_numpy()
    count[frame["key"].to_numpy()] = frame["count"].to_numpy()
    return LSHCells(cells.astype(np.int64), diam, count, H, n_candidates, n_degenerate)


def hasher_cells(hasher, basis, table: int = 0, max_candidates: int | None = None) -> LSHCells:
    """``euclidean_lsh_cells`` for table ``table`` of a ``routing.euclidean_lsh.EuclideanLSH``
    (or any object with ``directions`` (n_tables, n_hashes, dim), ``offsets``
    (n_tables, n_hashes) and ``width``).

    Raises:
        ValueError: as ``euclidean_lsh_cells``, or a table outside 0..n_tables-1.
    """
    directions = np.asarray(hasher.directions, np.float64)
    table = check_int(table, "table", 0, directions.shape[0] - 1)
    return euclidean_lsh_cells(directions[table], np.asarray(hasher.offsets, np.float64)[table],
                               float(hasher.width), basis, max_candidates)


def difference_body_radius(projected: np.ndarray, width: float) -> float:
    """max ‖u‖₂ over {u ∈ R^k : |g_i·u| ≤ w for all i}: a bound on every bucket's diameter.

    Two points z, z' of one bucket have |g_i·(z − z')| < w for every hash i, so z − z' lies in
    this symmetric polytope and the bucket's diameter is at most its largest norm, whatever
    the offsets and wherever the bucket lies (clipping by Γ only shrinks buckets).

    Arguments:
        projected: float (n_hashes, k), the directions projected on the subspace (g_i).
        width: w > 0.

    Returns:
        The radius (units of x); ``inf`` when the g_i do not span R^k.

    Raises:
        ValueError: non-finite input or width ≤ 0.
        RuntimeError: if Qhull fails on a numerically degenerate polytope.

    Source: used to certify Baykal et al. 2022, Lemma 4.2(1) for every bucket at once.
    """
    V = difference_body_vertices(projected, width)
    return float("inf") if V.size == 0 else float(np.linalg.norm(V[0]))


def difference_body_vertices(projected: np.ndarray, width: float) -> np.ndarray:
    """Vertices of the polytope {u ∈ R^k : |g_i·u| ≤ w for all i}, largest norm first.

    Arguments:
        projected: float (m, k), the hash directions projected on the subspace (g_i).
        width: w > 0.

    Returns:
        float64 (n_vertices, k), sorted by decreasing Euclidean norm (both u and −u appear).
        Empty (0, k) when the g_i do not span R^k (the polytope is unbounded).

    Raises:
        ValueError: width ≤ 0 or non-finite input.
        RuntimeError: if Qhull fails on a numerically degenerate polytope.

    Source: the difference body bounding every bucket (``difference_body_radius``);
    Baykal et al. 2022, Lemma 4.2(1).
    """
    G = check_points(projected, None, name="projected")
    w = check_real(width, "width", 0.0, None, low_open=True)
    m, k = G.shape
    if m < k or np.linalg.matrix_rank(G) < k:
        return np.zeros((0, k))
    if k == 1:
        r = w / float(np.abs(G[:, 0]).max())
        return np.array([[r], [-r]])
    # the polytope {|G u| <= w} is symmetric with 0 inside: its vertices by Qhull
    halfspaces = np.vstack([np.hstack([G, -w * np.ones((m, 1))]),
                            np.hstack([-G, -w * np.ones((m, 1))])])
    try:
        V = HalfspaceIntersection(halfspaces, np.zeros(k)).intersections
    except Exception as err:  # pragma: no cover - Qhull on degenerate input
        raise RuntimeError(f"Qhull failed on the difference body: {err}") from err
    return V[np.argsort(-np.linalg.norm(V, axis=1), kind="stable")]
