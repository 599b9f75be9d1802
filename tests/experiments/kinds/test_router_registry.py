"""experiments.kinds.routers as the one registry of routers: each router's label, source,
size knob and one layer builder for any (d_in, d_out), read by the sweep (d_out = 1) and the
continual harness (d_out = the classes) alike."""

import pytest
import torch

from experiments.kinds.continual_harness import MODELS, ContinualSettings
from experiments.kinds.registry import model_kind, register_model_kind, unregister_model_kind
from experiments.kinds.routers import (RouterKind, build_router, router_label, router_names,
                                       router_source)
from experiments.runner.specs import ModelSpec

pytestmark = pytest.mark.usefixtures("one_thread")

BUILTIN = ("comet", "sigma_moe", "topk_moe", "pkm", "smear", "sdmlp", "dense_mlp", "topk_mlp",
           "sdmlp_mask")


def test_every_builtin_router_has_a_label_a_source_and_a_knob():
    assert router_names()[:len(BUILTIN)] == BUILTIN
    labels = {name: router_label(name) for name in BUILTIN}
    assert labels == {"comet": "COMET", "sigma_moe": "σ-MoE", "topk_moe": "top-k MoE",
                      "pkm": "PKM", "smear": "SMEAR", "sdmlp": "SDMLP", "dense_mlp": "ReLU MLP",
                      "topk_mlp": "Top-K", "sdmlp_mask": "SDMLP (mask)"}
    for name in BUILTIN:
        kind = model_kind(name)
        assert router_source(name) and kind.knob in kind.sizes(16, 4, 4), name
    for bad in ("dense", "lsh_table"):  # registered kinds that are not routers
        with pytest.raises(ValueError, match=f"name must be a router kind, .*got '{bad}' .*not a"):
            router_label(bad)
    with pytest.raises(ValueError, match="name must be a router kind, one of .*'comet'"):
        router_source("no_such_router")


@pytest.mark.parametrize("name", BUILTIN)
def test_one_builder_makes_the_sweeps_layer_and_the_harness_layer(name):
    """The sweep's layer (d_out = 1) is the registry's builder at d_out = 1; at d_out = 10 the
    same builder gives the harness's classifier, the same hidden part."""
    kind = model_kind(name)
    spec = ModelSpec(name, **kind.example)
    sweep = build_router(spec, 8, seed=3, epochs=4)
    one = kind.make_layer(8, 1, 3, 4, **kind.sizes(spec.width, spec.k, spec.n_experts))
    assert [p.shape for p in sweep.parameters()] == [p.shape for p in one.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(sweep.parameters(), one.parameters()))
    ten = kind.make_layer(8, 10, 3, 4, **kind.sizes(spec.width, spec.k, spec.n_experts))
    y, _ = ten(torch.rand(5, 8))
    assert y.shape == (5, 10)
    assert ten.describe()["activated_units"] == one.describe()["activated_units"]


def test_every_harness_model_is_a_registered_router_with_options():
    kinds = {label: entry.kind for label, entry in MODELS.items()}
    assert kinds == {"SDMLP": "sdmlp", "SDMLP (mask)": "sdmlp_mask", "SDMLP + EWC": "sdmlp",
                     "Top-K": "topk_mlp", "ReLU MLP": "dense_mlp", "EWC (ReLU MLP)": "dense_mlp",
                     "COMET": "comet", "σ-MoE": "sigma_moe", "top-k MoE": "topk_moe",
                     "PKM": "pkm", "SMEAR": "smear", "oracle (ReLU MLP, joint)": "dense_mlp"}
    assert MODELS["sdmlp"] is MODELS["SDMLP"] and MODELS["dense_mlp"] is MODELS["ReLU MLP"]
    assert MODELS["SDMLP + EWC"].ewc and MODELS["oracle (ReLU MLP, joint)"].joint
    with pytest.raises(KeyError):
        MODELS["LSTM"]


def _wide(d_in, d_out, seed, epochs, width):
    from routing.layers import DenseMLP, DenseMLPConfig

    return DenseMLP(DenseMLPConfig(d_in=d_in, width=width, d_out=d_out, seed=seed))


def test_a_router_registered_once_joins_the_harness_with_its_knob():
    """A user's router with a knob and no families searches the knob from 1 (``families``'
    default) and is a harness model under its label, trained by its own rule."""
    kind = register_model_kind(RouterKind("my_wide", _wide, label="my wide MLP",
                                          knob="width", fields=("width",),
                                          example={"width": 8}))
    try:
        assert kind.families(16, 4, 4) == [({}, 1, None, "")]
        entry = MODELS["my wide MLP"]
        assert entry.kind == "my_wide" and MODELS["my_wide"] is not None
        s = ContinualSettings(n_neurons=16, k=4, n_experts=4)
        m = entry.match(16, 10, s)
        assert m["size"] == {"width": 16} and m["relative_difference"] == 0.0
        assert entry.training(s) == ("adam", 1e-3)  # DenseMLPConfig's own
    finally:
        unregister_model_kind("my_wide")
    assert "my wide MLP" not in MODELS


def test_router_kind_checks_its_arguments():
    with pytest.raises(TypeError, match="layer must be callable"):
        RouterKind("x", None)
    with pytest.raises(TypeError, match="sizes must be callable"):
        RouterKind("x", _wide, sizes=3)
    with pytest.raises(ValueError, match="label must be a string"):
        RouterKind("x", _wide, label=None)
    assert RouterKind("x", _wide).label == "x"  # the name by default
    assert RouterKind("x", _wide).families(16, 4, 4) == []  # no knob, no search
