"""One model interface: every model a sweep can fit is a registered ``ModelKind``.

A kind turns a ``ModelSpec`` into a fitted, measured model, in four steps a sweep calls in
this order (``ModelKind.run``): ``build`` (the model, from the spec, the input dimension
and a seed), ``fit`` (under a regime: "exact" for kinds linear in their trainable
parameters, "adam" for Adam on their top layer, "end_to_end" for everything trained end to
end), ``evaluate`` (errors on held-out
data, and the unit usage where the model counts it) and ``describe`` (activated units,
parameters, FLOPs: the columns plots compare at). The sweep (``experiments.runner.sweep``) never
asks which kind it holds.

The built-in kinds register themselves in ``experiments.kinds`` (loaded on the first lookup):

=================================  ===========================================================
dense, dsm, random_hash, lsh       Baykal et al. 2022's regression models (``routing.models``):
                                   linear in their top layer, so "exact" (least squares) or "adam"
lsh_table                          ``routing.LSHTable`` (bucket means; Theorem 4.1): "exact" only
comet, sigma_moe, topk_moe, pkm,   the ``routing.layers`` layers trained end to end as regressors
smear, sdmlp, dense_mlp            (``experiments.kinds.router_training``): "end_to_end" only
topk_mlp, sdmlp_mask               Bricken et al. 2023's Top-K MLP and SDMLP with masking:
                                   "end_to_end"
=================================  ===========================================================

The routers (``experiments.kinds.routers.RouterKind``) are the one registry of router layers:
each is registered once, with its label, source, size knob and one builder for any (d_in,
d_out), and the continual-learning harness (``experiments.kinds.continual_harness``) builds
every model of its own from them (``router_names``, ``router_label``, ``router_source``).

A kind of one's own registers the same way (``register_model_kind``; for a router layer,
``RouterKind`` needs only a function building the layer: see ``examples/own_router.py``) and
is then usable in every sweep, config file and preset, and a router in the continual
experiment too (``sparselab scale --module FILE.py --experiment continual``).
"""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import sys
import time
from typing import Any

__all__ = ["ModelKind", "register_model_kind", "model_kind", "model_kind_names",
           "unregister_model_kind", "END_TO_END", "FIT_REGIMES", "load_kind_module", "SPEC_FIELDS"]

#: ``ModelSpec`` fields a kind may read (``ModelKind.fields`` names a subset; the spec's
#: ``label`` and ``lr`` are open to every kind, ``options`` to any kind that lists it).
SPEC_FIELDS = ("width", "k", "n_bits", "n_tables", "n_hashes", "bucket_width", "n_experts",
               "family", "options")
#: Values a spec field takes when not given (a kind need not list fields left at these).
SPEC_DEFAULTS = {"n_tables": 1}
#: The regime of the kinds trained end to end (the routers and their dense MLP): each layer's
#: own optimiser (Adam; plain SGD for SDMLP, Bricken et al. 2023 §4) for the config's
#: ``train_steps``.
END_TO_END = "end_to_end"
FIT_REGIMES = ("exact", "adam", END_TO_END)

#: Modules that register the built-in kinds on import (loaded on the first lookup, so that
#: reading a spec imports no torch).
_BUILTIN_MODULES = ("experiments.kinds",)
_REGISTRY: dict[str, "ModelKind"] = {}
_loaded = False


class ModelKind:
    """The protocol every model kind follows; subclasses override ``build``, ``fit``,
    ``evaluate`` and ``describe`` (``run`` composes them and rarely needs overriding).

    Attributes:
        name: the ``ModelSpec.kind`` it answers to.
        regimes: the fit regimes it supports, a non-empty subset of ``FIT_REGIMES``; the
            first is used when a config asks for one it does not support (the LSH table is
            always fitted exactly, a router always end to end, ``END_TO_END``).
        fields: the ``ModelSpec`` fields it reads (``SPEC_FIELDS``); a spec setting any other
            field is refused, naming it.
        cpu_only: the model runs on the CPU whatever the sweep's device (results say so).
        description: one line for listings and docs.
        example: the fields of a small spec of this kind (the contract tests run every
            registered kind on it: ``tests/experiments/kinds/test_model_kinds.py``).
    """

    name: str = ""
    regimes: tuple[str, ...] = FIT_REGIMES
    fields: tuple[str, ...] = ()
    cpu_only: bool = False
    description: str = ""
    example: dict[str, Any] = {}

    # -- the spec --------------------------------------------------------------------------
    def check_spec(self, spec) -> None:
        """Check ``spec``'s fields for this kind (and fill defaults with
        ``object.__setattr__``, the spec being frozen). The base class refuses fields the
        kind does not read; subclasses call it and add their ranges.

        Raises:
            ValueError: naming the field and the allowed values.
        """
        for name in SPEC_FIELDS:
            value = getattr(spec, name)
            if name not in self.fields and value is not None \
                    and value != SPEC_DEFAULTS.get(name, object()):
                allowed = ", ".join(self.fields) or "none"
                raise ValueError(f"{name}={value!r} is not a parameter of model kind "
                                 f"{self.name!r} (its parameters: {allowed})")

    def regime(self, fit: str) -> str:
        """The regime this kind is fitted under when a config asks for ``fit``."""
        return fit if fit in self.regimes else self.regimes[0]

    # -- the four steps --------------------------------------------------------------------
    def build(self, spec, dim: int, seed: int, config):
        """The unfitted model of ``spec`` for inputs of dimension ``dim``, its random parts
        drawn with ``seed``; ``config`` (the ``ExperimentConfig``) gives training budgets."""
        raise NotImplementedError

    def fit(self, model, spec, config, X, y, regime: str, seed: int) -> float:
        """Fit ``model`` in place on (X, y) under ``regime``; return the training MSE (in
        y's units squared)."""
        raise NotImplementedError

    def evaluate(self, model, X, y) -> dict[str, float]:
        """{"mse", "linf"} on (X, y), plus "dead_fraction" and "usage_cv" where the model
        counts its units' usage."""
        raise NotImplementedError

    def describe(self, model, spec, X) -> dict[str, Any]:
        """Size and cost columns of a results row: width, k, buckets, nonempty_buckets,
        activated_units, params, flops_paper, flops_true, flops_cost_formula (None where
        they do not apply); ``X`` is the training data (the buckets it reaches)."""
        raise NotImplementedError

    def to_device(self, model, device):
        """``model`` on ``device`` (torch modules are moved; other models stay)."""
        return model.to(device) if hasattr(model, "to") else model

    def run(self, spec, config, data, seed: int, device) -> dict[str, Any]:
        """Build, fit, evaluate and describe: the measured part of a results row.

        Arguments:
            spec: the ``ModelSpec``; config: the ``ExperimentConfig``.
            data: (X (N, d), y (N,), X_eval (M, d), y_eval (M,)) float64 arrays.
            seed: the row's seed; device: a ``torch.device``.

        Returns:
            the row's columns: sizes and costs (``describe``), train_mse, eval_mse,
            linf_error, usage where counted, device and wall_s.
        """
        X, y, X_eval, y_eval = data
        start = time.perf_counter()
        device = "cpu" if self.cpu_only else device
        model = self.to_device(self.build(spec, X.shape[1], seed, config), device)
        train_mse = self.fit(model, spec, config, X, y, self.regime(config.fit), seed)
        metrics = self.evaluate(model, X_eval, y_eval)
        row = dict(self.describe(model, spec, X))
        row.update(train_mse=train_mse, eval_mse=metrics["mse"], linf_error=metrics["linf"],
                   **{k: v for k, v in metrics.items() if k not in ("mse", "linf")})
        row.update(device=str(device), wall_s=round(time.perf_counter() - start, 4))
        return row

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def register_model_kind(kind: ModelKind, replace: bool = False) -> ModelKind:
    """Register ``kind`` under ``kind.name``, so that ``ModelSpec(kind=kind.name, ...)`` and
    every sweep, config file and preset can use it.

    Arguments:
        kind: a ``ModelKind`` instance.
        replace: allow replacing a kind of the same name (a user's own kind can never replace
            a built-in one unless this is True).

    Returns:
        ``kind`` (so that it can be used as an expression).

    Raises:
        TypeError: ``kind`` is not a ``ModelKind``.
        ValueError: an empty name, regimes outside ``FIT_REGIMES``, fields outside
            ``SPEC_FIELDS``, or a name already registered without ``replace``; ``replace``
            not a bool.
    """
    if not isinstance(kind, ModelKind):
        raise TypeError(f"kind must be a ModelKind instance, got {type(kind).__name__}")
    from routing.validation import check_bool

    replace = check_bool(replace, "replace")  # "False" must not mean True
    if not isinstance(kind.name, str) or not kind.name.isidentifier():
        raise ValueError(f"kind.name must be a non-empty identifier, got {kind.name!r}")
    if not kind.regimes or not set(kind.regimes) <= set(FIT_REGIMES):
        raise ValueError(f"kind.regimes must be a non-empty subset of {FIT_REGIMES}, got "
                         f"{kind.regimes!r}")
    unknown = set(kind.fields) - set(SPEC_FIELDS)
    if unknown:
        raise ValueError(f"kind.fields must be ModelSpec fields {SPEC_FIELDS}, got "
                         f"{sorted(unknown)}")
    if kind.name in _REGISTRY and not replace and _REGISTRY[kind.name] is not kind:
        raise ValueError(f"model kind {kind.name!r} is registered already; pass replace=True "
                         f"to replace it")
    _REGISTRY[kind.name] = kind
    return kind


def unregister_model_kind(name: str) -> None:
    """Remove a registered kind (tests and notebooks that registered their own).

    Raises:
        ValueError: no kind of that name.
    """
    _load_builtins()
    if name not in _REGISTRY:
        raise ValueError(f"no model kind {name!r} is registered")
    del _REGISTRY[name]


def model_kind(name: str) -> ModelKind:
    """The registered kind called ``name``.

    Raises:
        ValueError: naming the registered kinds, when none is called ``name``, and how to
            register one's own (``sparselab scale --module FILE.py``, ``load_kind_module``).
    """
    _load_builtins()
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"model kind must be one of {model_kind_names()}, got {name!r}; "
                         f"a kind of one's own is registered by a .py file passed with "
                         f"`sparselab scale --module FILE.py` (examples/own_router.py)") \
            from None


def model_kind_names() -> tuple[str, ...]:
    """Names of every registered kind, built-in ones first, in registration order."""
    _load_builtins()
    return tuple(_REGISTRY)


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in _BUILTIN_MODULES:
            importlib.import_module(module)



def load_kind_module(path) -> list[str]:
    """Import a Python file that registers model kinds of one's own (``sparselab scale
    --module FILE.py``) and return the names it registered.

    The module is also marked to be pickled by value (cloudpickle), so that Dask workers,
    which cannot import it by name, receive its classes with each task.

    Arguments:
        path: a ``.py`` file, e.g. ``examples/own_router.py``.

    Returns:
        The kind names the file registered (or re-registered), in registration order.

    Raises:
        ValueError: not an existing ``.py`` file, or importing it registered no kind;
            whatever the module raises on import.
    """
    path = pathlib.Path(path)
    if path.suffix != ".py" or not path.is_file():
        raise ValueError(f"module must be an existing .py file, got {str(path)!r}")
    _load_builtins()  # the built-in kinds first, so that a user's cannot shadow one silently
    before = dict(_REGISTRY)
    name = f"sparselab_user_kinds_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    try:
        import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    except (ImportError, ValueError):  # pragma: no cover - without Dask there are no workers
        pass
    added = [n for n, kind in _REGISTRY.items() if before.get(n) is not kind]
    if not added:
        raise ValueError(f"module {str(path)!r} registered no model kind (call "
                         f"experiments.kinds.registry.register_model_kind)")
    return added
