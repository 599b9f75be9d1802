"""Eq. (1): symbolic operation counts, counts of the models of ``experiments``, the gap."""

import sympy as sp

from experiments.models import DSM, Dense, LSHModel
from proofs_checks._framework import Verdict
from proofs_checks.eq1_flops import MODEL_FLOPS, Eq1FlopsCheck, FlopsParams, symbolic_claims
from proofs_checks.op_counts import (
    DENSE_OPS, LSH_OPS, SYMBOLS, dense_forward_ops, lsh_forward_ops,
)

SMALL = FlopsParams(epsilons=(0.5, 0.25, 0.125))


def test_eq1_holds_on_the_experiments_models():
    r = Eq1FlopsCheck(SMALL).run(0)
    assert r.verdict == Verdict.HOLDS, r.details["mismatches"]
    assert r.details["ratio_grows_as_eps_shrinks"]
    assert 1.0 < r.measured <= SMALL.k + 0.5  # ratio ~ (1/ε)^k / log(1/ε)


class _LyingDense(Dense):
    def flops_true(self):
        return self.width  # forgets the bottom layer


def test_eq1_refuted_when_a_model_miscounts():
    r = Eq1FlopsCheck(SMALL, model_classes=(_LyingDense, DSM, LSHModel)).run(0)
    assert r.verdict == Verdict.REFUTED
    assert any("Dense.flops_true" in m for m in r.details["mismatches"])


def test_symbolic_claims():
    s = symbolic_claims(4)
    assert s["S_over_dk_log_ok"] and s["D_over_dense_bound_ok"] and s["S_over_D_ok"]
    assert s["S_over_D_k123"] == ["0", "0", "0"]


def test_op_counts_agree_with_their_expressions():
    d, m, N, w = (SYMBOLS[x] for x in "dmNw")
    for dim, hashes, buckets in [(1, 1, 1), (8, 8, 1000), (64, 3, 2**20)]:
        assert lsh_forward_ops(dim, hashes, buckets) == int(LSH_OPS.subs({d: dim, m: hashes, N: buckets}))
    for dim, width in [(1, 1), (8, 4096)]:
        assert dense_forward_ops(dim, width) == int(DENSE_OPS.subs({d: dim, w: width}))
    # the paper's convention of Table 1: 2(d + 1) per activated unit
    assert sp.simplify(MODEL_FLOPS["Dense"]["flops_paper"].subs(d, 8).subs(w, 1024)) == 18432
