"""What every router layer does with what it is given: the one input check of
``RouterLayer.check_input`` (type, shape, dtype, device, finiteness) on every public method
that takes x and on every execution path (fused CPU kernels and torch operations), and usage
counters that stay float64 and exact through dtype conversions."""

import numpy as np
import pytest
import torch

from routing.layers import (COMET, PKM, SDMLP, SMEAR, COMETConfig, DenseMLP, DenseMLPConfig,
                            PKMConfig, SDMLPConfig, SigmaMoE, SigmaMoEConfig, SMEARConfig,
                            TopKMoE, TopKMoEConfig)
from routing.layers._unit_kernel import normalised_rows

D_IN = 6

# name -> (factory, mode): each execution path of each layer once
FACTORIES = {
    "comet_kernel": lambda: COMET(COMETConfig(d_in=D_IN, widths=(16,), p_k=0.25)),
    "comet_matmuls": lambda: COMET(COMETConfig(d_in=D_IN, widths=(16, 12), p_k=0.25)),
    "sigma_moe_fused": lambda: SigmaMoE(SigmaMoEConfig(d_in=D_IN, n_experts=4, expert_size=3,
                                                       k=2)).eval(),
    "sigma_moe_dropout": lambda: SigmaMoE(SigmaMoEConfig(d_in=D_IN, n_experts=4, expert_size=3,
                                                         k=2, expert_dropout=0.3)).train(),
    "topk_moe_fused": lambda: TopKMoE(TopKMoEConfig(d_in=D_IN, n_experts=4, expert_size=3)),
    "topk_moe_torch": lambda: TopKMoE(TopKMoEConfig(d_in=D_IN, n_experts=4, expert_size=3, k=2,
                                                    renormalize=True)),
    "pkm": lambda: PKM(PKMConfig(d_in=D_IN, n_keys=4, k=3)),
    "pkm_projected": lambda: PKM(PKMConfig(d_in=D_IN, n_keys=4, k=3, project_query=True,
                                           d_key=4)),
    "smear": lambda: SMEAR(SMEARConfig(d_in=D_IN, n_experts=3, expert_size=4,
                                       expert_dropout=0.2)),
    "sdmlp_kernel": lambda: SDMLP(SDMLPConfig(d_in=D_IN, n_neurons=16, k_target=3,
                                              anneal_epochs=0)),
    "sdmlp_torch": lambda: SDMLP(SDMLPConfig(d_in=D_IN, n_neurons=16, k_target=3,
                                             gaba_switch=True)),
}

# the public methods besides forward that take x
METHODS = {"comet_kernel": ["masks", "hidden_activations"],
           "comet_matmuls": ["masks", "hidden_activations"],
           "sigma_moe_fused": ["route"], "sigma_moe_dropout": ["route"],
           "topk_moe_fused": ["route"], "topk_moe_torch": ["route"],
           "pkm": ["route"], "pkm_projected": ["route"], "smear": ["router_probs"],
           "sdmlp_kernel": ["hidden", "normalise_inputs"],
           "sdmlp_torch": ["hidden", "normalise_inputs"]}
CALLS = [(name, method) for name in FACTORIES for method in ["forward"] + METHODS[name]]


def _x(batch=8, dtype=torch.float32):
    return torch.randn(batch, D_IN, generator=torch.Generator().manual_seed(0), dtype=dtype)


def _with(value, where):
    x = _x()
    x[where] = value
    return x


# bad x -> a regular expression the ValueError must match
BAD = {
    "numpy array": (np.zeros((4, D_IN), np.float32),
                    r"^x must be a torch\.Tensor of shape \(B, 6\), got numpy\.ndarray"),
    "list": ([[0.0] * D_IN], r"^x must be a torch\.Tensor .*got builtins\.list"),
    "1-D": (torch.zeros(D_IN), r"^x must have shape \(B, 6\), got shape \(6,\)"),
    "3-D": (torch.zeros(2, 3, D_IN), r"^x must have shape \(B, 6\), got shape \(2, 3, 6\)"),
    "columns": (torch.zeros(4, D_IN + 1), r"^x must have shape \(B, 6\), got shape \(4, 7\)"),
    "float64": (torch.zeros(4, D_IN, dtype=torch.float64),
                r"^x must have dtype torch\.float32 \(the layer's parameters'\), got "
                r"torch\.float64"),
    "int64": (torch.zeros(4, D_IN, dtype=torch.int64), r"^x must have dtype torch\.float32"),
    "NaN": (_with(float("nan"), (3, 2)), r"^x must be finite; it has 1 NaN or infinite"),
    "+inf": (_with(float("inf"), (0, 0)), r"^x must be finite; it has 1 NaN or infinite"),
    "-inf row": (_with(-float("inf"), 5), r"^x must be finite; it has 6 NaN or infinite"),
    "meta device": (torch.zeros(4, D_IN, device="meta"), r"^x must be on device cpu"),
}


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("name,method", CALLS)
def test_bad_x_raises_a_value_error_naming_x_and_counts_nothing(name, method, bad):
    layer = FACTORIES[name]()
    x, message = BAD[bad]
    with pytest.raises(ValueError, match=message):
        getattr(layer, method)(x)
    # rejected before any counting (the kernels count into a copy, added on success)
    assert float(layer.examples_seen) == 0 and float(layer.unit_usage.abs().sum()) == 0


@pytest.mark.parametrize("name", FACTORIES)
def test_a_finite_x_whose_sum_overflows_is_not_rejected(name):
    """``check_finite_tensor`` sums x first; an infinite sum of finite entries must then be
    told apart entry by entry, not reported as a non-finite x."""
    layer = FACTORIES[name]()
    x = torch.full((64, D_IN), 3e38)
    assert not np.isfinite(float(x.sum()))
    assert layer.check_input(x) is x


@pytest.mark.parametrize("name", FACTORIES)
def test_a_huge_finite_x_gives_a_finite_output_or_an_error_naming_x(name):
    # products of x ~ 3e38 overflow float32; what leaves the layer is never NaN or inf
    layer = FACTORIES[name]()
    x = torch.full((5, D_IN), 3e38)
    try:
        y, _ = layer(x)
    except ValueError as error:
        assert str(error).startswith("x must be small enough"), error
    else:
        assert bool(torch.isfinite(y).all())


@pytest.mark.parametrize("name", [*FACTORIES, "dense"])
def test_a_non_finite_parameter_is_named_when_the_output_is_not_finite(name):
    layer = (DenseMLP(DenseMLPConfig(d_in=D_IN, width=8)) if name == "dense"
             else FACTORIES[name]())
    # the parameter every path reads: the one the input is checked against
    param = layer._input_like()
    pname = next(n for n, p in layer.named_parameters() if p is param)
    with torch.no_grad():
        param.fill_(float("nan"))
    with pytest.raises(ValueError, match=rf"^the layer's parameter {pname} must be finite"):
        layer(_x())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("split, lift", [(False, False), (True, False), (True, True)])
def test_sdmlp_normalisation_gives_unit_rows_at_any_finite_scale(dtype, split, lift):
    # rows of 3e38 overflowed the sum of squares (a row of zeros came out) and rows of 1e-30
    # underflowed it (a row of 8e7 came out); both paths now give x̂ / ‖x̂‖ as float64 does
    huge = torch.finfo(dtype).max / 4
    rows = torch.tensor([[huge, -huge, 1.0, 0.0, 2.0, -3.0], [1e-30, -2e-30, 0, 0, 1e-30, 0],
                         [0.5, -0.25, 1.0, 0.0, 2.0, -3.0], [0.0] * D_IN], dtype=dtype)
    reference = rows.double() / rows.double().abs().amax(dim=1, keepdim=True).clamp_min(1e-300)
    if split:
        reference = torch.cat([reference.clamp(min=0), (-reference).clamp(min=0)], dim=1)
    if lift:  # the lifted 1, scaled alike: it vanishes beside a huge row, dominates a tiny one
        scale = rows.double().abs().amax(dim=1, keepdim=True)
        reference = torch.cat([reference, 1.0 / scale.clamp_min(1e-300)], dim=1)
        reference[3] = torch.tensor([0.0] * (2 * D_IN) + [1.0])  # a zero row: just the lift
    reference = reference / reference.norm(dim=1, keepdim=True).clamp_min(1e-300)
    layer = SDMLP(SDMLPConfig(d_in=D_IN, n_neurons=8, k_target=2, split_signs=split,
                              lift_inputs=lift)).to(dtype)
    tolerance = dict(rtol=1e-6 if dtype == torch.float32 else 1e-14, atol=1e-7)
    kernel = normalised_rows(rows, split, lift)
    torch.testing.assert_close(kernel.double(), reference, **tolerance)
    torch_path = layer.normalise_inputs(rows.clone().requires_grad_(True))  # autograd: torch
    torch.testing.assert_close(torch_path.detach().double(), reference, **tolerance)
    norms = kernel.double().norm(dim=1)
    torch.testing.assert_close(norms[:3], torch.ones(3, dtype=torch.float64), **tolerance)


@pytest.mark.parametrize("name", FACTORIES)
def test_the_check_follows_the_layer_through_a_dtype_conversion(name):
    layer = FACTORIES[name]().double()
    y, _ = layer(_x(dtype=torch.float64))
    assert y.dtype == torch.float64
    with pytest.raises(ValueError, match=r"^x must have dtype torch\.float64"):
        layer(_x())


# -- usage counters through dtype conversions --------------------------------------------------
CONVERSIONS = {"float": lambda m: m.float(), "double": lambda m: m.double(),
               "half": lambda m: m.half(), "bfloat16": lambda m: m.to(torch.bfloat16)}
BIG = 2.0 ** 24  # float32 cannot add 1 to it; bfloat16 cannot even hold 257


def _dtype(conversion):
    return {"float": torch.float32, "double": torch.float64, "half": torch.float16,
            "bfloat16": torch.bfloat16}[conversion]


def _hard_count(layer, row) -> float | None:
    """Units a hard router selects for the example row (1, d_in), found without counting;
    None for SMEAR, which is soft."""
    if isinstance(layer, COMET):
        return float(sum(m.sum() for m in layer.masks(row)))
    if isinstance(layer, SDMLP):  # current_k, or the neurons the GABA switch lets fire
        return float(layer.hidden(row)[1].sum())
    if isinstance(layer, SMEAR):
        return None
    return float(layer.config.k)


@pytest.mark.parametrize("conversion", CONVERSIONS)
@pytest.mark.parametrize("name", FACTORIES)
def test_counters_stay_float64_and_exact_through_conversions(name, conversion):
    layer = FACTORIES[name]()
    layer(_x(5))
    before = layer.unit_usage.clone()
    with torch.no_grad():
        layer.examples_seen += BIG
    CONVERSIONS[conversion](layer)
    assert next(layer.parameters()).dtype == _dtype(conversion)
    assert layer.unit_usage.dtype == layer.examples_seen.dtype == torch.float64
    assert torch.equal(layer.unit_usage, before)
    assert float(layer.examples_seen) == BIG + 5
    # counting goes on exactly, in the new dtype (each layer runs on CPU in all four)
    expected = float(before.sum())
    for row in _x(3, _dtype(conversion)).split(1):
        count = _hard_count(layer, row)
        expected += 1.0 if count is None else count
        y, _ = layer(row)
        assert y.dtype == _dtype(conversion)
    assert float(layer.examples_seen) == BIG + 8
    if isinstance(layer, SMEAR):  # an example's router probabilities sum to 1, up to rounding
        assert float(layer.unit_usage.sum()) == pytest.approx(expected, rel=2e-2)
    else:
        assert float(layer.unit_usage.sum()) == expected


@pytest.mark.parametrize("name", FACTORIES)
def test_counters_survive_a_conversion_and_a_state_dict_round_trip(name):
    layer = FACTORIES[name]()
    layer(_x(7))
    with torch.no_grad():
        layer.unit_usage += BIG  # beyond every conversion's exact integers
    usage = layer.unit_usage.clone()
    layer.to(torch.bfloat16).float()
    fresh = FACTORIES[name]()
    fresh.load_state_dict(layer.state_dict())
    assert fresh.unit_usage.dtype == torch.float64
    assert torch.equal(fresh.unit_usage, usage) and float(fresh.examples_seen) == 7


def test_sdmlp_gaba_counts_stay_float64_through_half():
    layer = FACTORIES["sdmlp_torch"]().train()
    layer(_x(9))
    counts = layer.gaba_counts.clone()
    assert float(counts.sum()) > 0
    layer.half()
    assert layer.gaba_counts.dtype == torch.float64 and torch.equal(layer.gaba_counts, counts)


def test_a_device_move_keeps_the_counters():
    layer = FACTORIES["sigma_moe_fused"]()
    layer(_x(4))
    moved = layer.to("meta", torch.float16)
    assert moved is layer
    assert layer.unit_usage.device.type == "meta" and layer.unit_usage.dtype == torch.float64
