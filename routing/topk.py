"""Top-K selection with exactly k winners per row, ties broken by the lowest index.

A "score >= k-th largest score" threshold lets ties push the number of winners above k; the
Top-K activations of sparse networks (Baykal et al. 2022, §3 k-NN simulation and DSM mask;
Csordás et al. 2023, §3; COMET §4 k-winner-take-all) need exactly k. Here the winners of a
row are the k largest scores, and among equal scores the lower unit index wins, so the result
is a deterministic function of the scores. The torch twins (``routing.torch_twins.topk_mask``
and ``topk_indices``) follow the same rule.

The selection is vectorised numpy, O(n_units) per row (no sort of the whole row); reference:
:func:`topk_indices_reference` (a stable argsort of each row).
"""

from __future__ import annotations

import numpy as np

from routing.validation import check_int

__all__ = ["topk_indices", "topk_mask", "topk_indices_reference"]


def topk_indices(scores, k: int) -> np.ndarray:
    """Indices of the k largest scores of each row, by decreasing score, ties by lowest index.

    Arguments:
        scores: (N, n_units) real array; float32 and float64 are used as they are, other
            real dtypes as float64 (exact for integers up to 2**53); ±inf allowed, NaN not.
        k: number of winners, 1 <= k <= n_units.

    Returns:
        (N, k) int64; row i lists the winners of row i, best first; equal scores appear in
        increasing index order.

    Raises:
        ValueError: if ``scores`` is not a 2-D real array, contains NaN, or ``k`` is outside
            1..n_units.

    Source: Baykal et al. 2022, §3 (Top-k activations); ties broken by lowest index.
    """
    scores, k = _check(scores, k)
    mask = _mask(scores, k)
    winners = np.nonzero(mask)[1].reshape(len(scores), k)  # exactly k per row, index order
    values = np.take_along_axis(scores, winners, axis=1)
    order = np.argsort(-values, axis=1, kind="stable")  # stable: ties stay in index order
    return np.take_along_axis(winners, order, axis=1)


def topk_mask(scores, k: int) -> np.ndarray:
    """Boolean mask of the k winners of each row (exactly k True per row, ties by lowest index).

    O(n_units) per row: the k-th largest value v of each row (``np.partition``), then every
    score > v plus the first (k − #{score > v}) scores equal to v, in index order.

    Arguments and errors as :func:`topk_indices`.

    Returns:
        (N, n_units) bool.
    """
    scores, k = _check(scores, k)
    return _mask(scores, k)


def topk_indices_reference(scores: np.ndarray, k: int) -> np.ndarray:
    """Plain numpy reference: stable argsort of -scores (equal scores keep index order)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), axis=1, kind="stable")[:, :k]


def _mask(scores: np.ndarray, k: int) -> np.ndarray:
    n_units = scores.shape[1]
    kth = np.partition(scores, n_units - k, axis=1)[:, n_units - k, None]  # (N, 1)
    greater = scores > kth
    equal = scores == kth
    need = k - np.count_nonzero(greater, axis=1)[:, None]
    return greater | (equal & (np.cumsum(equal, axis=1) <= need))


def _check(scores, k):
    arr = np.asarray(scores)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise ValueError(f"scores must be a real-valued array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"scores must have shape (N, n_units), got shape {arr.shape}")
    k = check_int(k, "k", 1, arr.shape[1])
    dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    arr = np.asarray(arr, dtype=dtype)
    if np.isnan(arr).any():
        bad = int(np.count_nonzero(np.isnan(arr)))
        raise ValueError(f"scores must not contain NaN; it has {bad} NaN entries")
    return arr, k
