"""Lemma 4.2: the checks hold for the real Euclidean LSH and are refuted on planted violations
(buckets wider than the width the bound is computed with; bucket counts growing like ε^-2k)."""

from proofs_checks._framework import Verdict
from proofs_checks.lemma42_diameter import DiameterParams, Lemma42DiameterCheck
from proofs_checks.lemma42_table_size import Lemma42TableSizeCheck, TableSizeParams
from routing.euclidean_lsh import EuclideanLSH

SMALL = DiameterParams(dim=8, ks=(1, 2), Cs=(4, 16), n_draws=40)


def test_diameter_holds_for_euclidean_lsh():
    r = Lemma42DiameterCheck(SMALL).run(0)
    assert r.verdict == Verdict.HOLDS
    per_k = r.details["per_k"]
    for k in ("1", "2"):
        top = per_k[k]["16"]
        assert top["decision"]["successes"] == 40
        # more hashes per dimension, smaller buckets: the certified c grows with C
        c4, c16 = per_k[k]["4"]["c_max_certified"], top["c_max_certified"]
        assert c16 is not None and (c4 is None or c16 > c4)
        assert all(x <= 1.0 for x in top["radius_over_eps"] if x == x) or top["n_enumerated"] > 0


def test_diameter_refuted_for_buckets_too_wide():
    wide = lambda dim, m, width, seed: EuclideanLSH(dim, m, 8 * width, seed=seed)  # noqa: E731
    p = DiameterParams(dim=8, ks=(1, 2), Cs=(16,), n_draws=40)
    r = Lemma42DiameterCheck(p, hasher_factory=wide).run(0)
    assert r.verdict == Verdict.REFUTED
    assert r.measured < 0.5


def test_diameter_inconclusive_with_too_few_draws():
    r = Lemma42DiameterCheck(DiameterParams(dim=8, ks=(1,), Cs=(16,), n_draws=10)).run(0)
    assert r.verdict == Verdict.INCONCLUSIVE  # 10/10 cannot certify 0.9
    assert r.draws_needed == 26  # 36/36 would


def test_diameter_same_seed_same_numbers():
    p = DiameterParams(dim=6, ks=(2,), Cs=(4,), n_draws=5, exact_for="all")
    a, b = Lemma42DiameterCheck(p).run(7), Lemma42DiameterCheck(p).run(7)
    assert a.details == b.details


def test_table_size_holds_and_fits_an_exponent():
    p = TableSizeParams(dims=(8,), ks=(1, 2), calib_epsilons=(1.0, 0.5), verify_epsilon=0.25,
                        n_calib=6, n_verify=40)
    r = Lemma42TableSizeCheck(p).run(0)
    assert r.verdict == Verdict.HOLDS
    assert r.details["gamma_needed"] >= 1.0
    assert all(c["exact"] for c in r.details["calibration"])


def test_table_size_refuted_when_buckets_multiply_faster_than_the_bound():
    # width ε³ instead of ε: N ~ ε^{-3k}, the exponent fitted at large ε fails at small ε
    planted = lambda dim, m, width, seed: EuclideanLSH(dim, m, width**3, seed=seed)  # noqa: E731
    p = TableSizeParams(dims=(8,), ks=(1,), calib_epsilons=(1.0, 0.5), verify_epsilon=0.125,
                        n_calib=10, n_verify=40)
    r = Lemma42TableSizeCheck(p, hasher_factory=planted).run(0)
    assert r.verdict == Verdict.REFUTED


def test_table_size_with_a_given_exponent_far_too_small():
    p = TableSizeParams(dims=(8,), ks=(2,), calib_epsilons=(1.0,), verify_epsilon=0.5,
                        n_calib=2, n_verify=40, gamma=0.3)
    assert Lemma42TableSizeCheck(p).run(0).verdict == Verdict.REFUTED
