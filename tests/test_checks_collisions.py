"""LSH collision probabilities: closed forms inside exact intervals; a mis-specified width
is caught."""

from proofs_checks._framework import Verdict
from proofs_checks.collisions import CollisionsCheck, CollisionsParams
from routing.euclidean_lsh import EuclideanLSH
import numpy as np


SMALL = CollisionsParams(distances=(0.1, 0.5, 1.0, 2.0), angles=(0.2, 1.0, 2.5), trials=1500)


def test_collisions_hold_for_the_real_families():
    r = CollisionsCheck(SMALL).run(0)
    assert r.verdict == Verdict.HOLDS and r.measured == 0
    assert r.details["n_intervals"] == 14


def test_collisions_refuted_for_a_hasher_wider_than_stated():
    wide = lambda d, m, w, T, s: EuclideanLSH(d, m, 1.5 * w, n_tables=T, seed=s)  # noqa: E731
    assert CollisionsCheck(SMALL, euclidean_factory=wide).run(0).verdict == Verdict.REFUTED


class _BiasedHyperplane:
    """Sign hashes whose Gaussian directions share a mean (planted): nearby angles collide
    more often than 1 − θ/π. Same interface as ``HyperplaneLSH`` (packed keys)."""

    def __init__(self, dim, n_bits, n_tables=1, seed=0):
        self.dim, self.n_bits, self.n_tables = dim, n_bits, n_tables
        self.directions = np.random.default_rng(seed).standard_normal((n_tables, n_bits, dim))
        self.directions[..., 0] += 3.0

    def bucket_ids(self, X):
        bits = (np.einsum("tbd,nd->ntb", self.directions, X) >= 0).astype(np.int64)
        return (bits << np.arange(self.n_bits)).sum(axis=2)


def test_collisions_refuted_for_biased_hyperplanes():
    r = CollisionsCheck(SMALL, hyperplane_factory=lambda d, m, T, s: _BiasedHyperplane(
        d, m, T, s)).run(0)
    assert r.verdict == Verdict.REFUTED
