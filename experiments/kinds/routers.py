"""The router layers of ``routing.layers`` as model kinds, trained end to end as regressors
(``experiments.kinds.router_training``): COMET, σ-MoE, top-k MoE, PKM, SMEAR, SDMLP, and their dense
baseline ``DenseMLP``.

A spec gives every router the same two numbers, ``width`` (total hidden units) and ``k``
(activated units per example), so the routers are compared at matched activated units:

=========  ==================================================================================
comet      one hidden layer of ``width`` units, p_k = k / width (COMET §4)
sigma_moe  ``n_experts`` experts of width / n_experts units; k / expert size of them per example
topk_moe   the same shapes, softmax gate before top-k (Switch / Shazeer et al.)
smear      ``n_experts`` experts of k units merged into one per example (Muqeeth et al. §3)
pkm        n_keys = √width sub-keys per half, the top k of the width = n_keys² values (§3.2)
sdmlp      ``width`` neurons, k_target = k, k annealed from width over the first half of the
           training epochs (Bricken et al. 2023, Eq. 4)
dense_mlp  ``width`` = k hidden units, all active: the dense baseline (``DenseMLP``)
=========  ==================================================================================

Everything else is each layer's paper default (see its config class). A router of one's own
is one ``RouterKind`` with a function building its layer (``examples/own_router.py``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from experiments.kinds.registry import END_TO_END, ModelKind, model_kind, register_model_kind
from routing.validation import check_int, check_seed


class RouterKind(ModelKind):
    """A ``routing.layers.RouterLayer`` with d_out = 1 trained end to end (regime
    ``END_TO_END``: the layer's own optimiser, ``experiments.kinds.router_training.train_router``,
    at the spec's ``lr`` or the layer's own).

    Arguments:
        name: the kind's name.
        build_layer: ``build_layer(spec, dim, seed, epochs) -> RouterLayer`` (d_in = dim,
            d_out = 1; ``epochs`` is the number of passes the training will make).
        fields: spec fields it reads (default width and k).
        check: extra checks of a spec, after the field check and width >= 1; without it,
            1 <= k <= width is checked where the kind reads k.
        description: one line.
        example: fields of a small spec (default width 16, k 4).

    A results row reports the layer's own ``describe()``: activated units, parameters,
    FLOPs per example (``flops_true``; ``flops_paper`` is Baykal et al.'s 2·(d+1) per
    activated unit), and the dead fraction and usage spread on the evaluation data.
    """

    regimes = (END_TO_END,)

    def __init__(self, name: str, build_layer: Callable, fields: tuple[str, ...] = ("width", "k"),
                 check: Callable | None = None, description: str = "",
                 example: dict[str, Any] | None = None):
        self.name, self.build_layer_fn, self.fields = name, build_layer, tuple(fields)
        self._check, self.description = check, description
        self.example = example if example is not None else {"width": 16, "k": 4}

    def check_spec(self, spec) -> None:
        super().check_spec(spec)
        if "width" in self.fields:
            check_int(spec.width, "width", low=1)
        if "k" in self.fields and "width" in self.fields and self._check is None:
            check_int(spec.k, "k", low=1, high=spec.width)
        if self._check is not None:
            self._check(spec)

    def build_layer(self, spec, dim: int, seed: int, epochs: int = 1):
        """The layer of ``spec`` for inputs of dimension ``dim``, seeded by ``seed``.

        Raises:
            ValueError: dim < 1, a bad seed or epochs < 1.
        """
        return self.build_layer_fn(spec, check_int(dim, "dim", 1), check_seed(seed),
                                   check_int(epochs, "epochs", 1))

    def build(self, spec, dim, seed, config):
        from experiments.kinds.router_training import RouterRegressor

        n = config.n_train
        epochs = max(1, config.train_steps * min(config.train_batch, n) // n)
        return RouterRegressor(self.build_layer(spec, dim, seed, epochs=epochs))

    def fit(self, model, spec, config, X, y, regime, seed) -> float:
        from experiments.kinds.router_training import RouterTraining, train_router

        training = RouterTraining(steps=config.train_steps, batch_size=config.train_batch,
                                  lr=spec.lr)
        return train_router(model, X, y, training, seed=seed).train_mse

    def evaluate(self, model, X, y) -> dict[str, float]:
        from experiments.kinds.router_training import evaluate_router

        return evaluate_router(model, X, y)

    def describe(self, model, spec, X) -> dict[str, Any]:
        info = model.layer.describe()
        dim = X.shape[1]
        return {"width": spec.width, "k": spec.k, "buckets": None, "nonempty_buckets": None,
                "activated_units": info["activated_units"], "params": info["params"],
                "flops_paper": 2 * (dim + 1) * info["activated_units"],
                "flops_true": info["flops"],
                "flops_cost_formula": cost_formula_flops(model.layer)}


def cost_formula_flops(layer) -> int | None:
    """FLOPs per example by the layer's own paper's cost formula, where the paper gives one
    and the layer reports it as ``cost()["paper_formula"]`` (SMEAR: Muqeeth et al. 2024, §3,
    "Computational Costs"); None otherwise. ``flops_true`` counts the layer's actual
    multiply-adds × 2; the two differ by the paper's conventions (SMEAR's §3 charges the merge
    one FLOP per weight per expert, half a multiply-add count)."""
    cost = getattr(layer, "cost", None)
    if not callable(cost):
        return None
    value = cost().get("paper_formula")
    return None if value is None else int(value)


def build_router(spec, dim: int, seed: int, epochs: int = 1):
    """The router layer of ``spec`` for inputs of dimension ``dim`` and a scalar output.

    Arguments:
        spec: a ``ModelSpec`` of a router kind (``experiments.kinds.routers.RouterKind``:
            the built-in ``experiments.runner.specs.TRAINED_KINDS`` or one registered since).
        dim: input dimension, >= 1 (even for "pkm", whose query is split in halves).
        seed: seed of the layer's initialisation (and frozen parts), >= 0.
        epochs: passes over the training data the layer will get (SDMLP anneals k over the
            first half of them), >= 1.

    Returns:
        A ``RouterLayer`` with d_out = 1 on the CPU in float32.

    Raises:
        ValueError: a kind that is not a router, or arguments out of range (an odd ``dim``
            for "pkm").
    """
    kind = model_kind(spec.kind)
    if not isinstance(kind, RouterKind):
        raise ValueError(f"spec.kind must be a router kind, got {spec.kind!r} (a "
                         f"{type(kind).__name__})")
    return kind.build_layer(spec, dim, seed, epochs)


# -- the built-in routers -------------------------------------------------------------------

def _check_experts(spec) -> None:
    """σ-MoE, top-k MoE, SMEAR: n_experts divides the width; k whole experts (SMEAR: one)."""
    check_int(spec.k, "k", low=1, high=spec.width)
    check_int(spec.n_experts, "n_experts", low=1, high=spec.width)
    if spec.width % spec.n_experts:
        raise ValueError(f"width ({spec.width}) must be a multiple of n_experts "
                         f"({spec.n_experts})")
    size = spec.width // spec.n_experts
    if spec.k % size or (spec.kind == "smear" and spec.k != size):
        raise ValueError(f"k ({spec.k}) must be "
                         f"{'equal to' if spec.kind == 'smear' else 'a multiple of'} "
                         f"the expert size width / n_experts = {size}")


def _check_pkm(spec) -> None:
    check_int(spec.k, "k", low=1, high=spec.width)
    if round(spec.width ** 0.5) ** 2 != spec.width:
        raise ValueError(f"pkm width must be a square (n_keys²), got {spec.width}")


def _check_dense_mlp(spec) -> None:
    if spec.k is None:
        object.__setattr__(spec, "k", spec.width)
    check_int(spec.k, "k", low=spec.width, high=spec.width)  # every unit is active


def _comet(spec, dim, seed, epochs):
    from routing.layers import COMET, COMETConfig

    return COMET(COMETConfig(d_in=dim, widths=(spec.width,), d_out=1, p_k=spec.k / spec.width,
                             seed=seed))


def _moe_shape(spec, dim, seed) -> dict:
    size = spec.width // spec.n_experts
    return dict(d_in=dim, d_out=1, n_experts=spec.n_experts, expert_size=size,
                k=spec.k // size, seed=seed)


def _sigma_moe(spec, dim, seed, epochs):
    from routing.layers import SigmaMoE, SigmaMoEConfig

    return SigmaMoE(SigmaMoEConfig(**_moe_shape(spec, dim, seed)))


def _topk_moe(spec, dim, seed, epochs):
    from routing.layers import TopKMoE, TopKMoEConfig

    return TopKMoE(TopKMoEConfig(**_moe_shape(spec, dim, seed)))


def _smear(spec, dim, seed, epochs):
    from routing.layers import SMEAR, SMEARConfig

    return SMEAR(SMEARConfig(d_in=dim, d_out=1, n_experts=spec.n_experts, expert_size=spec.k,
                             seed=seed))


def _pkm(spec, dim, seed, epochs):
    from routing.layers import PKM, PKMConfig

    if dim % 2:  # q = x is split into two halves (App. A.3): named here as the caller's dim
        raise ValueError(f"dim must be even for a pkm router (its query x is split into two "
                         f"halves, Lample et al. 2019 App. A.3), got {dim}")
    return PKM(PKMConfig(d_in=dim, d_out=1, n_keys=math.isqrt(spec.width), k=spec.k,
                         seed=seed))


def _sdmlp(spec, dim, seed, epochs):
    from routing.layers import SDMLP, SDMLPConfig

    return SDMLP(SDMLPConfig(d_in=dim, d_out=1, n_neurons=spec.width, k_target=spec.k,
                             anneal_epochs=max(1, epochs // 2), seed=seed))


def _dense_mlp(spec, dim, seed, epochs):
    from routing.layers import DenseMLP, DenseMLPConfig

    return DenseMLP(DenseMLPConfig(d_in=dim, width=spec.width, d_out=1, seed=seed))


_EXPERT_FIELDS = ("width", "k", "n_experts")
for _kind in (
        RouterKind("comet", _comet, description="COMET: a fixed tree of routers picks k of "
                   "`width` neurons (Ramachandran et al.)"),
        RouterKind("sigma_moe", _sigma_moe, _EXPERT_FIELDS, _check_experts,
                   "σ-MoE: sigmoid gate, top-k experts (Csordás et al. 2023)",
                   {"width": 16, "k": 8, "n_experts": 4}),
        RouterKind("topk_moe", _topk_moe, _EXPERT_FIELDS, _check_experts,
                   "top-k MoE: softmax gate before top-k (Shazeer et al. 2017)",
                   {"width": 16, "k": 8, "n_experts": 4}),
        RouterKind("pkm", _pkm, ("width", "k"), _check_pkm,
                   "product-key memory: top k of n_keys² values (Lample et al. 2019)"),
        RouterKind("smear", _smear, _EXPERT_FIELDS, _check_experts,
                   "SMEAR: experts merged by their routing weights (Muqeeth et al. 2024)",
                   {"width": 16, "k": 4, "n_experts": 4}),
        RouterKind("sdmlp", _sdmlp, description="SDMLP: Top-K neurons, k annealed "
                   "(Bricken et al. 2023)"),
        RouterKind("dense_mlp", _dense_mlp, ("width", "k"), _check_dense_mlp,
                   "dense MLP of `width` units, all active: the routers' baseline",
                   {"width": 8})):
    register_model_kind(_kind)
