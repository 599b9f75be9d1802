"""The claims an experiment tests, each with its verdict, a paired significance statement, a
diagnosis computed from the data when it is not *supported*, its source and the run's sizes
against the paper's (issue 25, item 6; the protocol of shared/VERDICTS.md).

Rules, fixed in code:
- "A beats B" (Baykal et al. 2022, §5.2 and the router papers): *supported* when A's
  geometric-mean error over seeds is lower at every compared x, *not supported* when at none,
  *mixed* otherwise. Beside it, the paired effect: per seed, Δ = ln nMSE(A) − ln nMSE(B),
  averaged over the compared x, then the mean over seeds with a Student-t 95 % interval
  (``paired_difference``); and per x whether that x's interval excludes 0.
- Table 1, in the paper's words: "DSM uses only 18k FLOPs and gets smaller MSE than dense
  model with 73k FLOPs" — some DSM sparsity at the smallest FLOPs below dense at the largest
  (``table1_rule``). The equal-FLOPs comparisons the table lays out are reported too, marked
  as the table's layout rather than a sentence of the paper.
- Table 2, in the paper's words: "at the same total width a sparser DSM model *can* perform
  as well as a dense model" — a possibility: *supported* when at some total width the best
  DSM with k < width has nMSE ≤ ``AS_WELL_AS`` × dense (``table2_rule``). The paper's own
  Table 2 reads *supported* under it (1.34× at width 1024, 1.19× at 2048); requiring every
  width would call it mixed (2.03× at 4096), and requiring ≤ 1× would refute it.
- The subspace exponent: ``experiments.subspace``.

Each claim is judged per training regime present in the rows (column ``fit``: "exact" least
squares or "sgd", i.e. Adam), and the regime is named in the claim line.

The package: the claim record and its paired statistics, verdict and diagnosis (``_paired``),
the paper's Tables 1 and 2 and their rules (``_tables``), and each experiment's claims
(``_by_experiment``: ``claims_for``).
"""

from experiments.claims._by_experiment import (CLAIM_EXPERIMENTS, PAPER_SIZES, ROUTER_SOURCES,
                                               claims_for, matched_below, sizes_text)
from experiments.claims._paired import (CLAIM_COLUMNS, LEVEL, REGIME_TEXT, REGIMES, Claim,
                                        compare, comparison_diagnosis, comparison_verdict,
                                        lsh_description, mean_mse, paired_difference,
                                        seed_log_errors, significance_text, t_interval)
from experiments.claims._tables import (AS_WELL_AS, PAPER_TABLE1, PAPER_TABLE2,
                                        anomaly_diagnoses, paper_table2_anomalies, table1_rule,
                                        table2_rule, width_anomalies)

__all__ = ["Claim", "CLAIM_COLUMNS", "CLAIM_EXPERIMENTS", "REGIMES", "REGIME_TEXT", "LEVEL",
           "claims_for", "compare", "comparison_verdict", "comparison_diagnosis",
           "paired_difference", "t_interval", "seed_log_errors", "mean_mse",
           "significance_text", "lsh_description", "sizes_text", "matched_below",
           "table1_rule", "table2_rule", "width_anomalies", "anomaly_diagnoses",
           "paper_table2_anomalies", "PAPER_TABLE1", "PAPER_TABLE2", "AS_WELL_AS",
           "PAPER_SIZES", "ROUTER_SOURCES"]
