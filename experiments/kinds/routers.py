"""The router layers of ``routing.layers`` as model kinds, registered once for every
experiment: trained end to end as regressors in a sweep (``experiments.kinds.router_training``,
d_out = 1) and as classifiers in the continual-learning harness
(``experiments.kinds.continual_harness``, d_out = the number of classes).

A ``RouterKind`` is the one record of a router: its name (the registry key), label (its name
in tables and plots), source (paper, section), the function building its layer for any
(d_in, d_out), the layer's size arguments for a spec's (width, k, n_experts), and its size
knob: the integer size argument searched to match a reference's parameter count, with the
families of fixed arguments the search runs over. A spec gives every router the same numbers,
``width`` (total hidden units) and ``k`` (activated units per example), so the routers are
compared at matched activated units:

===========  ===================================================================================
comet        one hidden layer of ``width`` units, p_k = k / width (COMET §4)
sigma_moe    ``n_experts`` experts of width / n_experts units; k / expert size of them per example
topk_moe     the same shapes, softmax gate before top-k (Switch / Shazeer et al.)
smear        width / k experts of k units merged into one per example (Muqeeth et al. §3)
pkm          n_keys = √width sub-keys per half, the top k of the width = n_keys² values (§3.2)
sdmlp        ``width`` neurons, k_target = k, k annealed from width over the first half of the
             training epochs (Bricken et al. 2023, Eq. 4)
dense_mlp    ``width`` = k hidden units, all active: the dense baseline (``DenseMLP``; Bricken et
             al.'s "ReLU MLP")
topk_mlp     ``width`` ReLU units, the k largest kept (Bricken et al. 2023's Top-K baseline)
sdmlp_mask   SDMLP with Top-K by masking (Bricken et al. 2023, Table 2 "Linear Mask")
===========  ===================================================================================

Everything else is each layer's paper default (see its config class). A router of one's own
is one ``RouterKind`` with a function building its layer (``examples/own_router.py``); it is
then usable in every sweep and in the continual experiment.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from experiments.kinds.registry import (END_TO_END, ModelKind, model_kind, model_kind_names,
                                        register_model_kind)
from routing.validation import check_int, check_seed

__all__ = ["RouterKind", "build_router", "cost_formula_flops", "router_names", "router_label",
           "router_source"]

#: The vocabulary every router's ``sizes`` reads: a ``ModelSpec``'s fields, or the continual
#: harness's N (``n_neurons``), k and n_experts.
SIZE_VOCABULARY = ("width", "k", "n_experts")


def _spec_sizes(fields: tuple[str, ...]) -> Callable:
    """The default ``sizes``: the spec fields the kind reads among width, k, n_experts."""
    read = tuple(f for f in SIZE_VOCABULARY if f in fields)

    def sizes(width, k, n_experts):
        values = {"width": width, "k": k, "n_experts": n_experts}
        return {f: values[f] for f in read}
    return sizes


class RouterKind(ModelKind):
    """A router, registered once: a layer trained end to end in a sweep (regime
    ``END_TO_END``: the layer's own optimiser; ``fit``, ``evaluate``:
    ``experiments.kinds.router_training``, the spec's ``lr`` or the layer's own) and built the
    same way by the continual harness.

    Arguments:
        name: the kind's name (the registry key, ``ModelSpec.kind``).
        layer: ``layer(d_in=, d_out=, seed=, epochs=, **arguments) -> RouterLayer``: the layer
            for ``d_in`` inputs and ``d_out`` outputs (1 in a sweep, the classes in the
            continual harness) seeded by ``seed``; ``epochs`` is the number of passes the
            training will make; ``arguments`` are its size arguments (``sizes``) and any
            options an experiment adds (the continual harness's SDMLP: its image setting).
        sizes: ``sizes(width, k, n_experts) -> dict``: the layer's size arguments for a
            spec's width, k and n_experts (a sweep) or the continual preset's N, k and
            n_experts (None where a spec leaves it unset); default: the ones of those three
            the kind reads (``fields``), passed as they are.
        label: its name in tables and plots (default: ``name``).
        source: paper and section.
        knob: the integer size argument (a key of ``sizes``' dict) searched to match a
            reference's trainable-parameter count ("": none; the layer is built at the sizes
            given).
        families: ``families(width, k, n_experts) -> [(fixed arguments, lowest knob, highest
            knob or None, note), …]``, in order of preference (the continual harness's
            ``ContinualModel.match``); default with a knob: [({}, 1, None, "")].
        size_rule: how the knob is chosen, in words.
        fields: spec fields it reads (default width and k).
        check: extra checks of a spec, after the field check and width >= 1; without it,
            1 <= k <= width is checked where the kind reads k.
        description: one line.
        example: fields of a small spec (default width 16, k 4).

    A results row reports the layer's own ``describe()``: activated units, parameters,
    FLOPs per example (``flops_true``; ``flops_paper`` is Baykal et al.'s 2·(d+1) per
    activated unit), and the dead fraction and usage spread on the evaluation data.

    Raises:
        TypeError: ``layer``, ``sizes``, ``families`` or ``check`` not callable.
        ValueError: ``label``, ``source``, ``knob`` or ``size_rule`` not a string.
    """

    regimes = (END_TO_END,)

    def __init__(self, name: str, layer: Callable, sizes: Callable | None = None, *,
                 label: str = "", source: str = "", knob: str = "",
                 families: Callable | None = None, size_rule: str = "",
                 fields: tuple[str, ...] = ("width", "k"), check: Callable | None = None,
                 description: str = "", example: dict[str, Any] | None = None):
        for arg, value in (("layer", layer), ("sizes", sizes), ("families", families),
                           ("check", check)):
            if value is not None and not callable(value):
                raise TypeError(f"{arg} must be callable, got {value!r}")
        if not callable(layer):
            raise TypeError(f"layer must be callable, got {layer!r}")
        for arg, value in (("label", label), ("source", source), ("knob", knob),
                           ("size_rule", size_rule)):
            if not isinstance(value, str):
                raise ValueError(f"{arg} must be a string, got {value!r}")
        self.name, self.layer_fn, self.fields = name, layer, tuple(fields)
        self.sizes = sizes if sizes is not None else _spec_sizes(self.fields)
        self.label, self.source, self.knob, self.size_rule = label or name, source, knob, size_rule
        self._families = families
        self._check, self.description = check, description
        self.example = example if example is not None else {"width": 16, "k": 4}

    def families(self, width: int, k: int, n_experts: int | None) -> list[tuple]:
        """The knob's families for a preset's N = ``width``, ``k`` and ``n_experts``: [(fixed
        arguments, lowest knob, highest knob or None, note), …] ([] without a knob)."""
        if not self.knob:
            return []
        if self._families is None:
            return [({}, 1, None, "")]
        return list(self._families(width, k, n_experts))

    def check_spec(self, spec) -> None:
        super().check_spec(spec)
        if "width" in self.fields:
            check_int(spec.width, "width", low=1)
        if "k" in self.fields and "width" in self.fields and self._check is None:
            check_int(spec.k, "k", low=1, high=spec.width)
        if self._check is not None:
            self._check(spec)

    def make_layer(self, d_in: int, d_out: int, seed: int, epochs: int = 1, **arguments):
        """The layer for ``d_in`` inputs and ``d_out`` outputs with size arguments (and
        options) ``arguments``, seeded by ``seed``, for a training of ``epochs`` passes.

        Raises:
            ValueError: d_in or d_out < 1, a bad seed, epochs < 1; the layer's own errors.
        """
        return self.layer_fn(d_in=check_int(d_in, "d_in", 1), d_out=check_int(d_out, "d_out", 1),
                             seed=check_seed(seed), epochs=check_int(epochs, "epochs", 1),
                             **arguments)

    def build_layer(self, spec, dim: int, seed: int, epochs: int = 1):
        """The layer of ``spec`` for inputs of dimension ``dim`` and a scalar output, seeded
        by ``seed``.

        Raises:
            ValueError: dim < 1, a bad seed or epochs < 1.
        """
        dim = check_int(dim, "dim", 1)
        return self.make_layer(dim, 1, seed, epochs, **self.sizes(spec.width, spec.k,
                                                                   spec.n_experts))

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
    return _router(spec.kind, "spec.kind").build_layer(spec, dim, seed, epochs)


# -- the router registry ---------------------------------------------------------------------

def _router(name: str, what: str = "name") -> RouterKind:
    """The registered router ``name``, else ValueError naming ``what`` and the routers."""
    names = router_names()
    if not isinstance(name, str) or name not in names:
        other = (f" (a {type(model_kind(name)).__name__}, not a router)"
                 if isinstance(name, str) and name in model_kind_names() else "")
        raise ValueError(f"{what} must be a router kind, one of {names}, got {name!r}{other}; "
                         f"a router of one's own is registered by a .py file passed with "
                         f"`sparselab scale --module FILE.py` (examples/own_router.py)")
    return model_kind(name)


def router_names() -> tuple[str, ...]:
    """The names of every registered router (``RouterKind``), built-in ones first, in
    registration order: the models the continual harness can build."""
    return tuple(n for n in model_kind_names() if isinstance(model_kind(n), RouterKind))


def router_label(name: str) -> str:
    """The label (name in tables and plots) of the registered router ``name``: "σ-MoE" for
    "sigma_moe".

    Raises:
        ValueError: ``name`` is no registered router (naming the registered ones).
    """
    return _router(name).label


def router_source(name: str) -> str:
    """The source (paper, section) of the registered router ``name``.

    Raises:
        ValueError: ``name`` is no registered router (naming the registered ones).
    """
    return _router(name).source


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


def _comet(d_in, d_out, seed, epochs, width, k):
    from routing.layers import COMET, COMETConfig

    # p_k = k / width keeps k winners (COMET's k = round(p_k · width))
    return COMET(COMETConfig(d_in=d_in, widths=(width,), d_out=d_out, p_k=k / width, seed=seed))


def _moe_sizes(width, k, n_experts) -> dict:
    size = width // n_experts
    return {"n_experts": n_experts, "expert_size": size, "k": k // size}


def _moe(layer: str, config: str) -> Callable:
    def build(d_in, d_out, seed, epochs, n_experts, expert_size, k):
        from routing import layers

        return getattr(layers, layer)(getattr(layers, config)(
            d_in=d_in, d_out=d_out, n_experts=n_experts, expert_size=expert_size, k=k,
            seed=seed))
    return build


def _expert_sizes(width, k, n_experts) -> list[tuple]:
    """σ-MoE and top-k MoE: expert sizes G dividing k (k / G experts active, so k units),
    the preset's width / n_experts first, then the others by distance to it (ties: smaller);
    at least one expert more than are active."""
    preferred = width // n_experts
    sizes = sorted((g for g in range(1, k + 1) if k % g == 0),
                   key=lambda g: (abs(g - preferred), g))
    return [({"expert_size": g, "k": k // g}, k // g + 1, None,
             f"experts of {g} unit{'s' * (g > 1)}, {k // g} active, "
             + ("the preset's expert size N / n_experts" if g == preferred else
                f"a divisor of k = {k} next to the preset's expert size {preferred}"))
            for g in sizes]


def _smear(d_in, d_out, seed, epochs, n_experts, expert_size):
    from routing.layers import SMEAR, SMEARConfig

    return SMEAR(SMEARConfig(d_in=d_in, d_out=d_out, n_experts=n_experts,
                             expert_size=expert_size, seed=seed))


def _pkm(d_in, d_out, seed, epochs, n_keys, k):
    from routing.layers import PKM, PKMConfig

    if d_in % 2:  # q = x is split into two halves (App. A.3): named here as the caller's dim
        raise ValueError(f"dim must be even for a pkm router (its query x is split into two "
                         f"halves, Lample et al. 2019 App. A.3), got {d_in}")
    return PKM(PKMConfig(d_in=d_in, d_out=d_out, n_keys=n_keys, k=k, seed=seed))


def _sdmlp_layer(cls, d_in, d_out, seed, epochs, n_neurons, k, anneal_epochs=None, **options):
    """SDMLP or its masking variant ``cls``: k annealed over the first half of the ``epochs``
    unless ``anneal_epochs`` is given; ``options``: further ``SDMLPConfig`` fields."""
    from routing.layers import SDMLPConfig

    anneal = max(1, epochs // 2) if anneal_epochs is None else anneal_epochs
    return cls(SDMLPConfig(d_in=d_in, d_out=d_out, n_neurons=n_neurons, k_target=k,
                           anneal_epochs=anneal, seed=seed, **options))


def _sdmlp(**arguments):
    from routing.layers import SDMLP

    return _sdmlp_layer(SDMLP, **arguments)


def _sdmlp_mask(**arguments):
    from experiments.kinds.image_models import SDMLPMask

    return _sdmlp_layer(SDMLPMask, **arguments)


def _dense_mlp(d_in, d_out, seed, epochs, width):
    from routing.layers import DenseMLP, DenseMLPConfig

    return DenseMLP(DenseMLPConfig(d_in=d_in, width=width, d_out=d_out, seed=seed))


def _topk_mlp(d_in, d_out, seed, epochs, width, k):
    from experiments.kinds.image_models import TopKMLP

    return TopKMLP(d_in, width, k, d_out, seed)


def _any_width(width, k, n_experts):  # k of the width active, so the width is at least k
    return [({}, k, None, "")]


_WIDTH = "hidden width chosen for the parameter count closest to the ReLU MLP's"
_EXPERTS = ("expert count chosen for the parameter count closest to the ReLU MLP's (router "
            "included)")
_EXPERT_FIELDS = ("width", "k", "n_experts")
_SDMLP = dict(sizes=lambda width, k, n_experts: {"n_neurons": width, "k": k},
              knob="n_neurons", families=_any_width)
for _kind in (
        RouterKind("comet", _comet, label="COMET", source="COMET §4 (one hidden layer)",
                   knob="width", families=_any_width,
                   size_rule=f"{_WIDTH} (its routing is fixed, not trained, so N); p_k = k / "
                   f"width keeps k winners",
                   description="COMET: a fixed tree of routers picks k of `width` neurons "
                   "(Ramachandran et al.)"),
        RouterKind("sigma_moe", _moe("SigmaMoE", "SigmaMoEConfig"), _moe_sizes, label="σ-MoE",
                   source="Csordás et al. 2023, §5", knob="n_experts", families=_expert_sizes,
                   size_rule=_EXPERTS, fields=_EXPERT_FIELDS, check=_check_experts,
                   description="σ-MoE: sigmoid gate, top-k experts (Csordás et al. 2023)",
                   example={"width": 16, "k": 8, "n_experts": 4}),
        RouterKind("topk_moe", _moe("TopKMoE", "TopKMoEConfig"), _moe_sizes, label="top-k MoE",
                   source="Csordás et al. 2023, §4 (Switch)", knob="n_experts",
                   families=_expert_sizes, size_rule=_EXPERTS, fields=_EXPERT_FIELDS,
                   check=_check_experts,
                   description="top-k MoE: softmax gate before top-k (Shazeer et al. 2017)",
                   example={"width": 16, "k": 8, "n_experts": 4}),
        RouterKind("pkm", _pkm, lambda width, k, n_experts: {"n_keys": math.isqrt(width), "k": k},
                   label="PKM", source="Csordás et al. 2023, §3.2", knob="n_keys",
                   families=lambda width, k, n_experts: [
                       ({"k": k}, math.isqrt(k) + 1, None, f"{k} of n_keys² value slots active")],
                   size_rule="sub-keys per half chosen for the parameter count closest to the "
                   "ReLU MLP's (n_keys·d_in sub-key and n_keys²·classes value entries)",
                   check=_check_pkm,
                   description="product-key memory: top k of n_keys² values (Lample et al. 2019)"),
        # SMEAR merges its experts into one expert of k units per example: width / k of them
        RouterKind("smear", _smear,
                   lambda width, k, n_experts: {"n_experts": max(1, width // k), "expert_size": k},
                   label="SMEAR", source="Muqeeth et al. 2024, §3", knob="n_experts",
                   families=lambda width, k, n_experts: [
                       ({"expert_size": k}, 2, None,
                        f"experts of k = {k} units, merged into one per example")],
                   size_rule=_EXPERTS, fields=_EXPERT_FIELDS, check=_check_experts,
                   description="SMEAR: experts merged by their routing weights (Muqeeth et al. "
                   "2024)", example={"width": 16, "k": 4, "n_experts": 4}),
        RouterKind("sdmlp", _sdmlp, label="SDMLP",
                   source="Bricken et al. 2023, §4 Eq. 4, App. A.1",
                   size_rule="neurons chosen for the parameter count (no biases: N·(d_in + "
                   "classes)) closest to the ReLU MLP's; k_target = k",
                   description="SDMLP: Top-K neurons, k annealed (Bricken et al. 2023)", **_SDMLP),
        # the reference of the continual harness: its width is the one given (N)
        RouterKind("dense_mlp", _dense_mlp, lambda width, k, n_experts: {"width": width},
                   label="ReLU MLP", source="Bricken et al. 2023, §5 ReLU baseline",
                   knob="width", families=lambda width, k, n_experts: [({}, width, width, "")],
                   size_rule="the width given", check=_check_dense_mlp,
                   description="dense MLP of `width` units, all active: the routers' baseline",
                   example={"width": 8}),
        RouterKind("topk_mlp", _topk_mlp, label="Top-K",
                   source="Bricken et al. 2023, §5 Top-K baseline", knob="width",
                   families=_any_width,
                   size_rule=f"{_WIDTH} (its network is the ReLU MLP's, so N); k kept",
                   description="ReLU MLP keeping its k largest activations (Bricken et al. "
                   "2023's Top-K)"),
        RouterKind("sdmlp_mask", _sdmlp_mask, label="SDMLP (mask)",
                   source="Bricken et al. 2023, Table 2 'Linear Mask', App. B.3, Fig. 10",
                   size_rule="as SDMLP (the same parameters)",
                   description="SDMLP with Top-K by masking (Bricken et al. 2023's Linear "
                   "Mask)", **_SDMLP)):
    register_model_kind(_kind)
