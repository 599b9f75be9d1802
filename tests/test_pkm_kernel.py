"""PKM's CPU kernels (routing.layers._pkm_kernel) against the torch selection and value sum
they replace on the CPU (Lample et al. 2019; Csordás et al. 2023 §3.2, Eq. 8)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.layers._pkm_kernel import FRONTIER_MAX, pkm_select, weighted_value_sum
from routing.layers.pkm import PKM, PKMConfig


def _layer(n_keys, k, dtype=torch.float64):
    return PKM(PKMConfig(d_in=4, d_out=2, n_keys=n_keys, d_key=4, k=k)).to(dtype)


@settings(max_examples=60, deadline=None)
@given(n_keys=st.integers(1, 12) | st.sampled_from([FRONTIER_MAX, FRONTIER_MAX + 3]),
       data=st.data(), rows=st.integers(1, 20),
       levels=st.sampled_from([2, 4, 1000]), seed=st.integers(0, 10_000),
       double=st.booleans())
def test_selection_equals_the_torch_selection(n_keys, data, rows, levels, seed, double):
    """Few score levels make ties, inside the top k and at its edge, common. Up to
    FRONTIER_MAX ranks per half the merge scans its frontier, above it uses a heap."""
    k = data.draw(st.integers(1, n_keys * n_keys), label="k")
    dtype = torch.float64 if double else torch.float32
    layer = _layer(n_keys, k, dtype)
    gen = torch.Generator().manual_seed(seed)
    u = torch.randint(0, levels, (rows, 2, n_keys), generator=gen).to(dtype) / 3
    slot, pos_a, pos_b = pkm_select(u, k)
    ref_slot, ref_score = layer._select_torch(u)
    assert torch.equal(slot, ref_slot)
    assert torch.equal(slot, pos_b * n_keys + pos_a)
    assert torch.equal(u[:, 1].gather(1, pos_b) + u[:, 0].gather(1, pos_a), ref_score)


def test_selection_hands_non_finite_scores_back_to_torch():
    layer = _layer(4, 5)
    x = torch.randn(6, 4, dtype=torch.float64)
    u = torch.zeros(6, 2, 4, dtype=torch.float64)
    u[3, 1, 2] = float("nan")
    assert pkm_select(u, 5) is None
    huge = torch.zeros(2, 2, 4)  # finite scores whose sums overflow float32 to -inf
    huge[1, :, 0] = -3e38
    assert pkm_select(huge, 5) is None
    assert pkm_select(huge / 2, 5) is not None
    x[2, 0] = float("inf")  # the layer falls back to the torch path and its NaN order
    idx, gate = layer.route(x)
    assert idx.shape == (6, 5)
    assert torch.equal(idx[[0, 1, 3, 4, 5]], layer.route(x[[0, 1, 3, 4, 5]])[0])


def test_selection_rejects_k_out_of_range():
    with pytest.raises(ValueError, match=r"k must be in \[1, 9\]"):
        pkm_select(torch.zeros(2, 2, 3), 10)


def test_weighted_value_sum_equals_the_gather_expression():
    gen = torch.Generator().manual_seed(0)
    gate = torch.rand(7, 5, generator=gen, dtype=torch.float64).requires_grad_()
    values = torch.randn(11, 3, generator=gen, dtype=torch.float64).requires_grad_()
    slot = torch.randint(0, 11, (7, 5), generator=gen)  # repeated slots accumulate
    ref = (gate.unsqueeze(2) * values[slot]).sum(1)
    torch.testing.assert_close(weighted_value_sum(gate, slot, values), ref)
    assert torch.autograd.gradcheck(lambda g, v: weighted_value_sum(g, slot, v),
                                    (gate, values))
