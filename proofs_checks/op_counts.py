"""Operation counts of one forward pass, as sympy expressions and as numbers.

One "operation" is one scalar multiply, add, divide, floor, comparison or activation.

* LSH model (the learner of Theorem 4.1: ``routing.euclidean_lsh.EuclideanLSH`` with m hashes
  + ``routing.lsh_table.LSHTable`` with N non-empty buckets, degree 0):
  m projections a_i·x (d multiplies, d − 1 adds each), then per hash + b_i, / w and floor
  (3 each), 2 per hash to mix the code vector into a key, and ⌈log2 N⌉ comparisons to find
  the key among the N sorted bucket keys (binary search):
  S = m(2d − 1) + 3m + 2m + ⌈log2 N⌉ = m(2d + 4) + ⌈log2 N⌉.
* Dense random-features model of width w (Theorem 4.3): w dot products (2d − 1), w bias
  adds, w ReLUs, then the top layer's w multiplies and w − 1 adds:
  D = w(2d − 1) + w + w + 2w − 1 = w(2d + 3) − 1.

Source: Baykal et al. 2022, §3.2 ("O(sm) hash computations, each taking O(d) time"),
Theorem 4.1 (forward pass O(dk log(L√d/ε))) and Eq. (1).
"""

from __future__ import annotations

import math

import sympy as sp

from lipschitz.validation import check_int

__all__ = ["lsh_forward_ops", "dense_forward_ops", "LSH_OPS", "DENSE_OPS", "SYMBOLS"]

#: The symbols of the expressions: d (input dimension), m (hashes), N (non-empty buckets),
#: w (dense width), k (subspace dimension), eps (accuracy ε), L (Lipschitz constant),
#: C (constant of Lemma 4.2 / Theorem 4.3), gamma (exponent of Lemma 4.2(2)).
SYMBOLS = dict(zip(["d", "m", "N", "w", "k", "eps", "L", "C", "gamma"],
                   sp.symbols("d m N w k epsilon L C gamma", positive=True)))

_d, _m, _N, _w = SYMBOLS["d"], SYMBOLS["m"], SYMBOLS["N"], SYMBOLS["w"]
#: Operations of an LSH forward pass (module docstring); ⌈log2 N⌉ as sympy ceiling.
LSH_OPS = _m * (2 * _d - 1) + 3 * _m + 2 * _m + sp.ceiling(sp.log(_N, 2))
#: Operations of a dense random-features forward pass of width w.
DENSE_OPS = _w * (2 * _d - 1) + _w + _w + 2 * _w - 1


def lsh_forward_ops(dim: int, n_hashes: int, n_buckets: int) -> int:
    """m(2d + 4) + ⌈log2 N⌉ operations (module docstring), N = max(n_buckets, 1).

    Raises:
        ValueError: dim or n_hashes < 1, n_buckets < 0.
    """
    d = check_int(dim, "dim", 1)
    m = check_int(n_hashes, "n_hashes", 1)
    N = max(check_int(n_buckets, "n_buckets", 0), 1)
    return m * (2 * d + 4) + math.ceil(math.log2(N))


def dense_forward_ops(dim: int, width: int) -> int:
    """w(2d + 3) − 1 operations (module docstring).

    Raises:
        ValueError: dim or width < 1.
    """
    d = check_int(dim, "dim", 1)
    w = check_int(width, "width", 1)
    return w * (2 * d + 3) - 1
