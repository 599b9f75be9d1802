"""Theorem 4.1: the LSH learner check holds with the stated constants and is refuted when the
table is far smaller than the theorem's (buckets too wide) or the samples far fewer."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lipschitz import UniformSubspace
from proofs_checks._framework import Verdict
from proofs_checks.theorem41_learner import (
    LearnerParams, Theorem41LearnerCheck, _PrefixBucketMeans, make_target,
    symbolic_parameter_choices, theorem_samples,
)
from routing.euclidean_lsh import EuclideanLSH
from routing.lsh_table import LSHTable

SMALL = dict(configs=((1, 0.25),), sample_constants=(4.0, 16.0, 64.0), claimed_constant=64.0,
             n_draws=17, n_test=2000)


def test_learner_holds_with_the_stated_constants():
    r = Theorem41LearnerCheck(LearnerParams(**SMALL)).run(0)
    assert r.verdict == Verdict.HOLDS
    c = r.details["configs"]["k=1,eps=0.25"]
    assert c["lshtable_max_abs_difference"] <= 1e-12
    assert c["success_rate"][-1] == 1.0
    assert c["smallest_n_point"] is not None
    assert r.details["forward_cost_ok"]
    assert all(v for k, v in r.details["sympy"].items() if k.endswith("_ok"))


def test_learner_refuted_when_the_table_is_far_too_small():
    # buckets 10x wider than the theorem's width: far fewer buckets, each far too coarse
    r = Theorem41LearnerCheck(LearnerParams(**{**SMALL, "width_constant": 7.5})).run(0)
    assert r.verdict == Verdict.REFUTED


def test_learner_refuted_with_far_too_few_samples():
    p = LearnerParams(**{**SMALL, "sample_constants": (0.05,), "claimed_constant": 0.05})
    assert Theorem41LearnerCheck(p).run(0).verdict == Verdict.REFUTED


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 2), st.integers(0, 1000), st.integers(1, 3000))
def test_prefix_means_equal_lshtable(k, seed, n):
    subspace = UniformSubspace(6, k, seed=seed)
    f = make_target("bumps", 6, subspace.basis, 1.0, 0.4, seed)
    X, Xt = subspace.sample(n, seed=seed + 1), subspace.sample(300, seed=seed + 2)
    y = f(X)
    h = EuclideanLSH(6, 3 * k, 0.3, seed=seed)
    keys = h.bucket_ids(np.vstack([X, Xt]))[:, 0]
    means = _PrefixBucketMeans(keys[:n], y, keys[n:])
    m = max(1, n // 2)
    pred, empty = LSHTable(h).fit(X[:m], y[:m]).predict(Xt, return_empty=True)
    value, found = means.at(m)
    np.testing.assert_array_equal(found, ~empty[:, 0])
    np.testing.assert_allclose(value[found], pred[found], rtol=1e-12, atol=1e-12)
    assert means.n_buckets(m) == len(LSHTable(h).fit(X[:m], y[:m]).buckets_)


def test_theorem_samples_and_errors():
    r = math.sqrt(8) / 0.25
    assert theorem_samples(1.0, 2, 8, 1.0, 0.25) == math.ceil(2 * r**2 * math.log(r))
    with pytest.raises(ValueError, match="exceed 1"):
        theorem_samples(1.0, 1, 1, 1.0, 2.0)
    with pytest.raises(ValueError, match="claimed_constant"):
        LearnerParams(claimed_constant=3.0).validate()
    with pytest.raises(ValueError, match="target"):
        LearnerParams(target="nope").validate()
    with pytest.raises(ValueError, match="epsilon"):
        LearnerParams(configs=((1, 10.0),)).validate()


def test_symbolic_parameter_choices():
    s = symbolic_parameter_choices()
    assert s["coupon_collector_ok"] and s["table_exponent_ok"] and s["ops_ok"]
    assert s["samples_minus_T_log_T"] == "0"


@pytest.mark.parametrize("kind", ["bumps", "mlp", "polynomial", "hypercube"])
def test_targets_are_certified_lipschitz(kind):
    s = UniformSubspace(6, 2, seed=0)
    f = make_target(kind, 6, s.basis, 2.0, 0.5, 1)
    assert f.lipschitz_bound == pytest.approx(2.0)
