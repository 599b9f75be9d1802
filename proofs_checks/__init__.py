"""Executable checks of the theorems and lemmas of Baykal et al. 2022 (§3–§4, App. B).

A check draws the random objects a claim quantifies over, measures, and decides by a rule
fixed in code before the run (``docs/checks.md``); its power is measured on planted
violations, and a check that could not have failed reports *underpowered*. Verdicts: holds /
refuted / inconclusive / underpowered / out of reach / exact identity. ``run_checks`` runs the
registered ones (``sparselab check``; ``--module PATH`` adds one's own);
``proofs_checks.strategies`` holds hypothesis strategies for one's own property tests.
"""

import importlib

# Names load on first use (PEP 562), so that `sparselab check --help` and its usage errors
# do not import scipy.stats (the framework) before there is a check to run.
_SOURCES = {
    **dict.fromkeys(["POWER_WANTED", "Check", "CheckParams", "CheckResult", "Planted",
                     "PowerEstimate", "ProbabilityDecision", "Verdict", "child_seeds",
                     "clopper_pearson", "combine_verdicts", "decide_probability",
                     "final_verdict", "measure_power", "register"],
                    "proofs_checks._framework"),
    **dict.fromkeys(["ExponentEstimate", "bootstrap_exponent", "decide_exponent",
                     "OrderStatistic", "InterpolatedQuantile"],
                    "proofs_checks._scaling"),
    **dict.fromkeys(["load_check_module", "run_checks"], "proofs_checks.cli"),
    **dict.fromkeys(["all_checks", "get_check"], "proofs_checks.registry"),
}

__all__ = ["Check", "CheckParams", "CheckResult", "Planted", "PowerEstimate",
           "ProbabilityDecision", "Verdict", "POWER_WANTED", "child_seeds", "clopper_pearson",
           "combine_verdicts", "decide_probability", "final_verdict", "measure_power",
           "register", "ExponentEstimate", "bootstrap_exponent", "decide_exponent",
           "OrderStatistic", "InterpolatedQuantile",
           "load_check_module", "run_checks", "all_checks", "get_check"]


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'proofs_checks' has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_SOURCES))
