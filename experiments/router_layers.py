"""Build the router layers of ``routing.layers`` from a sweep's ``ModelSpec``.

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

Everything else is each layer's paper default (see its config class).
"""

from __future__ import annotations

import math

from experiments.specs import TRAINED_KINDS, ModelSpec
from routing.validation import check_int, check_seed
from routing.layers import (
    COMET,
    PKM,
    SDMLP,
    SMEAR,
    COMETConfig,
    DenseMLP,
    DenseMLPConfig,
    PKMConfig,
    RouterLayer,
    SDMLPConfig,
    SigmaMoE,
    SigmaMoEConfig,
    SMEARConfig,
    TopKMoE,
    TopKMoEConfig,
)

__all__ = ["build_router"]


def build_router(spec: ModelSpec, dim: int, seed: int, epochs: int = 1) -> RouterLayer:
    """The router layer of ``spec`` for inputs of dimension ``dim`` and a scalar output.

    Arguments:
        spec: a ``ModelSpec`` whose kind is one of ``experiments.specs.TRAINED_KINDS``.
        dim: input dimension, >= 1.
        seed: seed of the layer's initialisation (and frozen parts), >= 0.
        epochs: passes over the training data the layer will get (SDMLP anneals k over the
            first half of them), >= 1.

    Returns:
        A ``RouterLayer`` with d_out = 1 on the CPU in float32.

    Raises:
        ValueError: unknown kind, or arguments out of range.
    """
    dim = check_int(dim, "dim", 1)
    seed = check_seed(seed)
    epochs = check_int(epochs, "epochs", 1)
    w, k = spec.width, spec.k
    if spec.kind == "comet":
        return COMET(COMETConfig(d_in=dim, widths=(w,), d_out=1, p_k=k / w, seed=seed))
    if spec.kind in ("sigma_moe", "topk_moe"):
        size = w // spec.n_experts
        shape = dict(d_in=dim, d_out=1, n_experts=spec.n_experts, expert_size=size,
                     k=k // size, seed=seed)
        return (SigmaMoE(SigmaMoEConfig(**shape)) if spec.kind == "sigma_moe"
                else TopKMoE(TopKMoEConfig(**shape)))
    if spec.kind == "smear":
        return SMEAR(SMEARConfig(d_in=dim, d_out=1, n_experts=spec.n_experts, expert_size=k,
                                 seed=seed))
    if spec.kind == "pkm":
        return PKM(PKMConfig(d_in=dim, d_out=1, n_keys=math.isqrt(w), k=k, seed=seed))
    if spec.kind == "sdmlp":
        return SDMLP(SDMLPConfig(d_in=dim, d_out=1, n_neurons=w, k_target=k,
                                 anneal_epochs=max(1, epochs // 2), seed=seed))
    if spec.kind == "dense_mlp":
        return DenseMLP(DenseMLPConfig(d_in=dim, width=w, d_out=1, seed=seed))
    raise ValueError(f"spec.kind must be one of {TRAINED_KINDS}, got {spec.kind!r}")
