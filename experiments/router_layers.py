"""Build the router layers of ``routing.layers`` from a sweep's ``ModelSpec``: the layer
builders are the router kinds' (``experiments.kinds.routers``, which tells how a spec's width
and k become each layer's shapes); this module keeps the one-call form.
"""

from __future__ import annotations

from experiments.kinds.routers import RouterKind
from experiments.model_kinds import model_kind
from experiments.specs import ModelSpec

__all__ = ["build_router"]


def build_router(spec: ModelSpec, dim: int, seed: int, epochs: int = 1):
    """The router layer of ``spec`` for inputs of dimension ``dim`` and a scalar output.

    Arguments:
        spec: a ``ModelSpec`` of a router kind (``experiments.kinds.routers.RouterKind``:
            the built-in ``experiments.specs.TRAINED_KINDS`` or one registered since).
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
