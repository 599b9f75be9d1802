"""Executable checks of the theorems and lemmas of Baykal et al. 2022 (§3–§4).

A check draws the random objects a claim quantifies over, measures, and returns a
``CheckResult`` with a verdict (holds / refuted / inconclusive; probabilistic claims by the
Clopper–Pearson rule). ``run_checks`` runs the registered ones (``sparselab check``);
``proofs_checks.strategies`` holds hypothesis strategies for one's own property tests.
"""

from proofs_checks._framework import (
    Check,
    CheckParams,
    CheckResult,
    ProbabilityDecision,
    Verdict,
    decide_probability,
    register,
)
from proofs_checks.cli import run_checks
from proofs_checks.registry import all_checks, get_check

__all__ = ["Check", "CheckParams", "CheckResult", "ProbabilityDecision", "Verdict",
           "decide_probability", "register", "run_checks", "all_checks", "get_check"]
