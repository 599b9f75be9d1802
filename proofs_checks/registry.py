"""The registry of checks, in the order ``sparselab check`` runs them.

Importing a check module registers its class (``proofs_checks._framework.register``);
``all_checks()`` imports them all and returns the registry in this order.
"""

from __future__ import annotations

import importlib

from proofs_checks._framework import REGISTRY, Check

__all__ = ["CHECK_MODULES", "all_checks", "get_check"]

#: Modules holding one registered check each, in run order (cheap and exact ones first).
CHECK_MODULES = (
    "proofs_checks.simulations",
    "proofs_checks.collisions",
    "proofs_checks.lipschitz_certificates",
    "proofs_checks.lsh_vs_uniform",
    "proofs_checks.eq1_flops",
    "proofs_checks.lemma42_diameter",
    "proofs_checks.lemma42_table_size",
    "proofs_checks.theorem43_dense_lower_bound",
    "proofs_checks.theorem41_learner",
    "proofs_checks.theorem_b1_manifold",
)


def all_checks() -> dict[str, type[Check]]:
    """name -> check class for every registered check: those of ``CHECK_MODULES`` in that
    order, then any registered elsewhere (e.g. by a user) in registration order."""
    for module in CHECK_MODULES:
        importlib.import_module(module)
    rank = {module: i for i, module in enumerate(CHECK_MODULES)}
    names = sorted(REGISTRY, key=lambda n: rank.get(REGISTRY[n].__module__, len(rank)))
    return {name: REGISTRY[name] for name in names}


def get_check(name: str) -> type[Check]:
    """The check class registered as ``name``.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    checks = all_checks()
    if name not in checks:
        raise ValueError(f"unknown check {name!r}; known checks: {', '.join(checks)}")
    return checks[name]
