"""Executable checks of the theorems and lemmas of Baykal et al. 2022 (§3–§4, App. B).

A check draws the random objects a claim quantifies over, measures, and decides by a rule
fixed in code before the run (``../shared/VERDICTS.md``); its power is measured on planted
violations, and a check that could not have failed reports *underpowered*. Verdicts: holds /
refuted / inconclusive / underpowered / out of reach / exact identity. ``run_checks`` runs the
registered ones (``sparselab check``; ``--module PATH`` adds one's own);
``proofs_checks.strategies`` holds hypothesis strategies for one's own property tests.
"""

from proofs_checks._framework import (
    POWER_WANTED,
    Check,
    CheckParams,
    CheckResult,
    Planted,
    PowerEstimate,
    ProbabilityDecision,
    Verdict,
    child_seeds,
    clopper_pearson,
    combine_verdicts,
    decide_probability,
    final_verdict,
    measure_power,
    register,
)
from proofs_checks._scaling import ExponentEstimate, bootstrap_exponent, decide_exponent
from proofs_checks.cli import load_check_module, run_checks
from proofs_checks.registry import all_checks, get_check

__all__ = ["Check", "CheckParams", "CheckResult", "Planted", "PowerEstimate",
           "ProbabilityDecision", "Verdict", "POWER_WANTED", "child_seeds", "clopper_pearson",
           "combine_verdicts", "decide_probability", "final_verdict", "measure_power",
           "register", "ExponentEstimate", "bootstrap_exponent", "decide_exponent",
           "load_check_module", "run_checks", "all_checks", "get_check"]
