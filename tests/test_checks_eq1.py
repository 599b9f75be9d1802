"""Eq. (1): counted operations of the real models, each scaling threshold moved across by a
planted lookup or width rule, the instrumented lookup checked against the real one, the
planted violations refuted, the algebraic part, determinism and validation."""

import functools
from dataclasses import replace

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.models import DSM, Dense
from lipschitz import UniformSubspace
from proofs_checks._framework import Verdict
from proofs_checks.eq1_flops import (
    Eq1FlopsCheck, FixedWidth, FlopsParams, ScaledWidth, symbolic_claims, theorem43_width,
)
from proofs_checks.op_counts import (
    DENSE_OPS, LSH_OPS, SYMBOLS, CountedLSHForward, OpCount, binary_search,
    count_torch_flops, counted_codebook_id, dense_forward_ops, linear_scan, lsh_forward_ops,
)
from routing.euclidean_lsh import EuclideanLSH
from routing.lsh_table import LSHTable

SMALL = FlopsParams(dims=(4, 8), n_boot=200, n_power=2)


def partial_scan(beta):
    """A lookup that scans the first ⌈N^β⌉ sorted keys before bisecting the rest: the same
    positions as a binary search, a cost growing as N^β."""
    def search(keys, key):
        head = min(int(np.ceil(len(keys) ** beta)), len(keys))
        for i in range(head):
            if not keys[i] < key:
                return i, i + 1
        pos, comparisons = binary_search(keys[head:], key)
        return head + pos, head + comparisons
    return search


def off_by_one(keys, key):
    """A lookup that returns the wrong position (not the real computation)."""
    pos, comparisons = binary_search(keys, key)
    return min(pos + 1, len(keys)), comparisons


_PLANTED = {"scan0.7": {"search": partial_scan(0.7)}, "scan0.9": {"search": partial_scan(0.9)},
            "eps-0.25": {"dense_width": ScaledWidth(eps_offset=-0.25)},
            "eps-0.75": {"dense_width": ScaledWidth(eps_offset=-0.75)},
            "dim-0.25": {"dense_width": ScaledWidth(dim_offset=-0.25)},
            "dim-0.75": {"dense_width": ScaledWidth(dim_offset=-0.75)}}


@functools.lru_cache(maxsize=None)
def decided(planted=None, seed=0):
    """``Eq1FlopsCheck(SMALL, **_PLANTED[planted]).decide(seed)``, once per test session."""
    return Eq1FlopsCheck(SMALL, **_PLANTED.get(planted, {})).decide(seed)


def parts(result, prefix):
    return {k: v for k, v in result.details["parts"].items() if k.startswith(prefix)}


def test_eq1_holds_on_the_counted_models():
    r = decided()
    assert r.verdict == Verdict.HOLDS, r.details.get("diagnosis")
    assert all(r.details["verified_against_real_computation"].values())
    for v in parts(r, "sparse_eps").values():
        assert v["ci"][1] <= 0.5 and v["verdict"] == "holds"
    for key, v in parts(r, "dense_eps").items():
        assert abs(v["exponent"] - int(key[-1])) < 0.1  # ≈ k
    rows = r.details["rows"]
    assert len(rows) == 2 * 2 * 5
    for row in rows:  # Dense counted by FlopCounterMode: 2dw + 3w + 1 per example
        w, d = row["dense_width"], row["dim"]
        assert row["dense"] == 2 * d * w + 3 * w + 1
        assert row["sparse_stages"]["hash"] == row["hashes"] * (2 * d + 2)
        assert row["sparse_stages"]["search"] <= np.floor(np.log2(row["buckets"])) + 2
    # dense/sparse grows as ε shrinks
    big = [x for x in rows if x["dim"] == 8 and x["k"] == 2]
    ratio = [x["dense"] / x["sparse_mean"] for x in big]
    assert all(np.diff(ratio) > 0) and ratio[-1] > 50
    assert r.details["calibration"].startswith("none")


def test_sparse_epsilon_threshold_moves_across_with_the_lookup():
    # scan of the first N^0.7 keys: exponents (÷ log2 x) at k = 2 stay ≤ 0.5; N^0.9: above
    below, above = decided("scan0.7"), decided("scan0.9")
    for d in (4, 8):
        lo, hi = below.details["parts"][f"sparse_eps d={d},k=2"], \
            above.details["parts"][f"sparse_eps d={d},k=2"]
        assert lo["verdict"] == "holds" and 0 < lo["ci"][1] <= 0.5
        assert hi["verdict"] == "refuted" and 0.5 < hi["ci"][0] < 1.0
    assert above.verdict == Verdict.REFUTED
    assert all(above.details["verified_against_real_computation"].values())


def test_sparse_dk_threshold_moves_across_with_the_lookup():
    binary = decided().details["parts"]["sparse_dk"]
    scan = decided("scan0.9").details["parts"]["sparse_dk"]
    assert binary["verdict"] == "holds" and binary["ci"][1] <= 1.5
    assert scan["verdict"] == "refuted" and scan["ci"][0] > 1.5


def test_dense_epsilon_threshold_moves_across_with_the_width():
    # widths growing as (1/ε)^(k − 0.25): holds (≥ k − 0.5); as (1/ε)^(k − 0.75): refuted
    slow, slower = decided("eps-0.25"), decided("eps-0.75")
    for key, v in parts(slow, "dense_eps").items():
        k = int(key[-1])
        assert v["verdict"] == "holds" and k - 0.5 <= v["exponent"] < k - 0.1
    for key, v in parts(slower, "dense_eps").items():
        k = int(key[-1])
        assert v["verdict"] == "refuted" and k - 1.0 < v["exponent"] < k - 0.5
    assert slower.verdict == Verdict.REFUTED


def test_dense_dim_threshold_moves_across_with_the_width():
    slow, slower = decided("dim-0.25"), decided("dim-0.75")
    for k in (1, 2):
        a = slow.details["parts"][f"dense_d k={k}"]
        b = slower.details["parts"][f"dense_d k={k}"]
        assert a["verdict"] == "holds" and a["exponent"] >= 1 + k / 2 - 0.5
        assert b["verdict"] == "refuted" and b["exponent"] < 1 + k / 2 - 0.5
    assert slow.verdict == Verdict.HOLDS and slower.verdict == Verdict.REFUTED


def test_exact_part_fails_when_the_lookup_is_not_the_real_one():
    r = Eq1FlopsCheck(SMALL, search=off_by_one).decide(0)
    assert r.verdict == Verdict.REFUTED
    assert not r.details["verified_against_real_computation"]["positions"]


def test_planted_violations_are_refuted():
    check = Eq1FlopsCheck(SMALL)
    planted = {p.name: p for p in check.planted_violations()}
    assert set(planted) == {"linear_scan_lookup", "fixed_dense_width"}
    scan, fixed = planted["linear_scan_lookup"].build(), planted["fixed_dense_width"].build()
    assert scan.search is linear_scan and isinstance(fixed.dense_width, FixedWidth)
    for seed in (1,):
        r = scan.decide(seed)
        assert r.verdict == Verdict.REFUTED
        assert any(v["verdict"] == "refuted" for v in parts(r, "sparse").values())
        r = fixed.decide(seed)
        assert r.verdict == Verdict.REFUTED
        assert all(v["verdict"] == "refuted" for v in parts(r, "dense_eps").values())


def test_same_seed_same_numbers():
    a, b = decided(), Eq1FlopsCheck(SMALL).decide(0)
    assert a.details == b.details
    c = decided(seed=1)  # the seed changes the random models
    assert [r["buckets"] for r in c.details["rows"]] != [r["buckets"] for r in a.details["rows"]]


@pytest.mark.parametrize("change, match", [
    ({"dims": (8,)}, "dims"), ({"dims": (8, 4)}, "dims"), ({"ks": (1, 5)}, "ks"),
    ({"epsilons": (0.5, 0.25)}, "epsilons"), ({"epsilons": (0.25, 0.5, 0.125)}, "epsilons"),
    ({"epsilons": (2.0, 0.5, 0.25)}, "epsilons"), ({"C_h": 0}, "C_h"),
    ({"n_queries": 1}, "n_queries"), ({"margin": -1.0}, "margin"), ({"n_boot": 5}, "n_boot"),
])
def test_parameter_validation(change, match):
    with pytest.raises(ValueError, match=match):
        Eq1FlopsCheck(replace(SMALL, **change)).decide(0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=200, unique=True),
       st.integers(-60, 60))
def test_searches_find_the_numpy_position(keys, key):
    keys = np.array(sorted(keys), dtype=np.int64)
    pos, comparisons = binary_search(keys, key)
    assert pos == np.searchsorted(keys, key)
    assert comparisons <= int(np.floor(np.log2(len(keys)))) + 1
    pos2, scanned = linear_scan(keys, key)
    assert pos2 == pos and scanned == min(pos + 1, len(keys))


def test_counted_forward_matches_the_table_and_counts_its_steps():
    s = UniformSubspace(6, 2, seed=0)
    X = s.sample(2000, seed=1)
    hasher = EuclideanLSH(6, 5, 0.3, n_tables=2, seed=2)
    table = LSHTable(hasher).fit(X, X[:, 0])
    Q = np.vstack([s.sample(40, seed=3), X[:5]])  # unseen and seen buckets
    ids = hasher.bucket_ids(Q, add=False)
    for t in range(2):  # the codebook's probe sequence gives its ids
        book = hasher._codebooks[t]
        for q in range(len(Q)):
            codes = hasher.hash(Q[q:q + 1])[0, t]
            got, count = counted_codebook_id(book._slots, book._book, codes)
            assert got == ids[q, t] and count.cmp >= 1 and count.int_ops >= 5 * 5
    fwd = CountedLSHForward(table)
    preds, counts, stages = fwd.forward(Q)
    assert all(fwd.verified.values())
    np.testing.assert_allclose(preds, table.predict(Q), rtol=1e-12, atol=1e-12)
    assert stages["hash"].mul == len(Q) * 2 * 5 * 6 and stages["hash"].floor == len(Q) * 10
    assert stages["value"].div == len(Q) and stages["value"].add == len(Q) * (2 - 1)
    assert all(c.total == sum(getattr(c, f) for f in ("mul", "add", "div", "floor", "cmp",
                                                       "int_ops")) for c in counts)
    with pytest.raises(ValueError, match="fitted"):
        CountedLSHForward(LSHTable(hasher))
    total = OpCount(mul=1)
    total += OpCount(add=2, memory=3)
    assert (total.total, total.memory) == (3, 3)


def test_torch_counts_and_widths():
    X = torch.rand(16, 8)
    total, per_op = count_torch_flops(Dense(8, 100), X)
    assert total == 2 * 8 * 100 + 100 + 2 * 100 + 1  # addmm, ReLU, top layer, bias
    assert per_op["aten.addmm"] == 1600
    total, _ = count_torch_flops(DSM(8, 100, 10), X.clone().requires_grad_(True))
    assert total >= 1600  # the whole bottom layer, whatever the sparsity
    with pytest.raises(ValueError, match="example"):
        count_torch_flops(Dense(8, 4), torch.zeros(0, 8))
    assert theorem43_width(4, 2, 0.25, 4.0) == 16 == ScaledWidth()(4, 2, 0.25, 4.0)
    assert ScaledWidth(eps_offset=-1.0)(4, 2, 0.25, 4.0) == 8
    assert FixedWidth(7)(16, 2, 0.01, 1.0) == 7
    with pytest.raises(ValueError, match="epsilon"):
        theorem43_width(4, 2, 0.0, 4.0)


def test_symbolic_claims():
    s = symbolic_claims(4)
    assert s["S_over_dk_log_ok"] and s["D_over_dense_bound_ok"] and s["S_over_D_ok"]
    assert s["S_over_D_k123"] == ["0", "0", "0"]


def test_op_counts_agree_with_their_expressions():
    d, m, N, w = (SYMBOLS[x] for x in "dmNw")
    for dim, hashes, buckets in [(1, 1, 1), (8, 8, 1000), (64, 3, 2**20)]:
        expected = int(LSH_OPS.subs({d: dim, m: hashes, N: buckets}))
        assert lsh_forward_ops(dim, hashes, buckets) == expected
    for dim, width in [(1, 1), (8, 4096)]:
        assert dense_forward_ops(dim, width) == int(DENSE_OPS.subs({d: dim, w: width}))
    assert sp.simplify(DENSE_OPS.subs({d: 8, w: 1024})) == 1024 * 19 - 1
