"""sparselab's statistics: every interval, test, multiplicity adjustment and exponent fit,
written once and used by both the checks (``proofs_checks``) and the experiment claims.

It sits at the bottom of the package graph: it imports numpy, scipy and statsmodels only.
"""

from inference.bootstrap import BootstrapInterval, bootstrap_interval, percentile_interval
from inference.exponents import ExponentFit, fit_exponent
from inference.intervals import TInterval, clopper_pearson, power_lower_bound, t_interval
from inference.multiplicity import MultipleTestResult, adjust_p_values, bonferroni, holm
from inference.effect_size import minimal_detectable_effect, seeds_needed
from inference.equivalence import EquivalenceResult, beyond_band_p, tost_paired
from inference.paired import (PairedTestResult, SignFlipResult, cluster_means, paired_t_test,
                              paired_test, sign_flip_test)

__all__ = [
    "clopper_pearson",
    "power_lower_bound",
    "t_interval",
    "TInterval",
    "holm",
    "bonferroni",
    "adjust_p_values",
    "MultipleTestResult",
    "bootstrap_interval",
    "percentile_interval",
    "BootstrapInterval",
    "fit_exponent",
    "ExponentFit",
    "sign_flip_test",
    "paired_t_test",
    "paired_test",
    "cluster_means",
    "SignFlipResult",
    "PairedTestResult",
    "tost_paired",
    "beyond_band_p",
    "EquivalenceResult",
    "minimal_detectable_effect",
    "seeds_needed",
]
